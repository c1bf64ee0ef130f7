import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { PNG_BASE64 } from '../../src/simulator';
import { GRID_PRICE, IMAGE_PRICE, startMediaHarness, type MediaHarness } from './support';

let h: MediaHarness;
beforeAll(async () => {
  h = await startMediaHarness({ imageTimings: { keepAliveAfterMs: 300, keepAliveEveryMs: 100, hopMs: 5000, ladderMs: 8000 } });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');
const wallet = (accountId: string) => h.t.gateway.ledger.wallet(accountId);

async function client(keyFields: Record<string, unknown> = {}) {
  const { accountId, key, keyId } = await h.t.accountWithKey(keyFields);
  return { accountId, keyId, key, openai: new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }) };
}

const post = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${h.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

interface Row {
  request_id: string;
  status: string;
  unit_count: number | null;
  unit_type: string | null;
  cost_usd: string;
  error_code: string | null;
  attempts_count: number;
  result_urls: string[];
  result_expires_at: number | null;
}
async function rows(accountId: string): Promise<Row[]> {
  await h.t.gateway.ledger.idle();
  await h.t.gateway.runner.catchUpToHead();
  return ((await h.t.admin('GET', `/accounts/${accountId}/logs`)).json() as { data: Row[] }).data;
}

describe('POST /v1/images/generations', () => {
  it('generates with the openai SDK, bills per image returned and logs the unit count', async () => {
    const { accountId, openai } = await client();
    const raw = await openai.images.generate({ model: 'img-model-v1', prompt: 'a red cube', n: 2 }).asResponse();
    expect(raw.status).toBe(200);
    const trace = raw.headers.get('x-gateway-trace');
    expect(trace).toMatch(/^req_/);
    const body = (await raw.json()) as { created: number; expires_at: number; data: Array<{ url: string }> };
    expect(body.data).toHaveLength(2);
    expect(body.expires_at).toBe(body.created + 24 * 3600);
    const forwarded = h.sim.requests.at(-1)!;
    expect(forwarded.path).toBe('/img-a/v1/images/generations');
    expect(forwarded.model).toBe('img-model-upstream');
    expect(forwarded.apiKey).toBe('key-img-a');

    const w = await wallet(accountId);
    expect(w.balance).toBe(GRANT - 2n * parseUsd(IMAGE_PRICE));
    expect(w.held).toBe(0n);
    const [row] = await rows(accountId);
    expect(row).toMatchObject({ request_id: trace, status: 'success', unit_count: 2, unit_type: 'image', cost_usd: '0.08', attempts_count: 1 });
    expect(row!.result_urls).toEqual(body.data.map((d) => d.url));
    expect(row!.result_expires_at).toBe(body.expires_at);
  });

  it('passes b64_json through and defaults n to 1', async () => {
    const { accountId, openai } = await client();
    const result = await openai.images.generate({ model: 'img-model', prompt: 'inline please', response_format: 'b64_json' });
    expect(result.data).toHaveLength(1);
    expect(result.data![0]!.b64_json).toBe(PNG_BASE64);
    expect((result as { expires_at?: number }).expires_at).toBeUndefined();
    expect((await wallet(accountId)).balance).toBe(GRANT - parseUsd(IMAGE_PRICE));
  });

  it('reserves unit x max(n, 4) on a fixed-grid SKU and settles the 4 images returned', async () => {
    const { accountId, openai } = await client();
    const result = await openai.images.generate({ model: 'grid-model', prompt: 'grid', n: 1 });
    expect(result.data).toHaveLength(4);
    const reserved = (await h.t.gateway.storage.store.readStream(`wallet-${accountId}`)).find((e) => e.type === 'FundsReserved');
    expect(BigInt((reserved!.data as { amount: string }).amount)).toBe(4n * parseUsd(GRID_PRICE));
    expect((await wallet(accountId)).balance).toBe(GRANT - 4n * parseUsd(GRID_PRICE));
  });

  it('refuses with 402 and calls no upstream when the reservation does not fit', async () => {
    // Room for 3 images of the grid SKU, which always reserves 4.
    const { key } = await client({ spend_cap_usd: '0.075' });
    const response = await post('/v1/images/generations', key, { model: 'grid-model', prompt: 'x', n: 1 });
    expect(response.status).toBe(402);
    const error = ((await response.json()) as { error: { code: string; type: string; message: string } }).error;
    expect(error).toMatchObject({ code: 'quota_exceeded', type: 'insufficient_quota' });
    expect(error.message).toContain('spend cap of 0.075');
    expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(h.sim.requests).toHaveLength(0);
  });

  it('answers 400 invalid_request for n above 10, a missing prompt and a bad response_format, in the chat shape', async () => {
    const { key, accountId } = await client();
    for (const body of [
      { model: 'img-model', prompt: 'x', n: 11 },
      { model: 'img-model' },
      { model: 'img-model', prompt: 'x', response_format: 'png' },
      { model: 'img-model', prompt: 'x', n: 0 },
    ]) {
      const response = await post('/v1/images/generations', key, body);
      expect(response.status).toBe(400);
      const json = (await response.json()) as { error: { code: string; type: string; message: string } };
      expect(json.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    }
    expect(h.sim.requests).toHaveLength(0);
    expect((await wallet(accountId)).balance).toBe(GRANT);
    expect((await rows(accountId)).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
  });

  it('resolves models: unknown 400, a chat model 503, an image model on chat 503; a refused key still gets x-gateway-trace', async () => {
    const { key } = await client();
    const unknown = await post('/v1/images/generations', key, { model: 'nope', prompt: 'x' });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
    const chat = await post('/v1/images/generations', key, { model: 'chat-model', prompt: 'x' });
    expect(chat.status).toBe(503);
    expect(((await chat.json()) as { error: { code: string } }).error.code).toBe('no_channel_available');
    const onChat = await post('/v1/chat/completions', key, { model: 'img-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(onChat.status).toBe(503);
    const noKey = await fetch(`${h.baseUrl}/v1/images/generations`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const { key: limited } = await client({ allowed_models: ['chat-model'] });
    const notAllowed = await post('/v1/images/generations', limited, { model: 'img-model', prompt: 'x' });
    expect(notAllowed.status).toBe(400);
    expect(((await notAllowed.json()) as { error: { code: string } }).error.code).toBe('model_not_allowed');
  });

  it('merges image and image_urls in order for the upstream', async () => {
    const { key } = await client();
    const response = await post('/v1/images/generations', key, { model: 'img-model', prompt: 'fuse', image: 'https://a.example/1.png', image_urls: ['https://a.example/2.png', 'data:image/png;base64,AAAA'] });
    expect(response.status).toBe(200);
    const sent = h.sim.requests.at(-1)!.body as Record<string, unknown>;
    expect(sent.image).toEqual(['https://a.example/1.png', 'https://a.example/2.png', 'data:image/png;base64,AAAA']);
    expect(sent.image_urls).toBeUndefined();
  });

  it('passes an upstream 4xx through unchanged, tries no other channel and bills nothing', async () => {
    const { accountId, key } = await client();
    h.sim.enqueue('http_400');
    const response = await post('/v1/images/generations', key, { model: 'img-model', prompt: 'x' });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(h.sim.requests).toHaveLength(1);
    const w = await wallet(accountId);
    expect(w.balance).toBe(GRANT);
    expect(w.held).toBe(0n);
    const [row] = await rows(accountId);
    expect(row).toMatchObject({ status: 'error', cost_usd: '0.00', error_code: 'invalid_request' });
  });

  it('fails over on a 5xx to the next channel and bills once; all channels 5xx passes the status through', async () => {
    const { accountId, key } = await client();
    h.sim.enqueue('http_503');
    const ok = await post('/v1/images/generations', key, { model: 'img-model', prompt: 'x' });
    expect(ok.status).toBe(200);
    expect(h.sim.requests.map((r) => r.apiKey)).toEqual(['key-img-a', 'key-img-b']);
    expect((await wallet(accountId)).balance).toBe(GRANT - parseUsd(IMAGE_PRICE));
    expect((await rows(accountId))[0]).toMatchObject({ status: 'success', attempts_count: 2 });

    h.sim.reset();
    h.sim.enqueue(['http_500']);
    h.sim.enqueue(['http_500']);
    const failed = await post('/v1/images/generations', key, { model: 'img-model', prompt: 'x' });
    expect(failed.status).toBe(500);
    expect((await wallet(accountId)).balance).toBe(GRANT - parseUsd(IMAGE_PRICE));
    expect((await wallet(accountId)).held).toBe(0n);
  });

  it('past the keep-alive point sends 200 early: the answer follows the whitespace; a later failure is a 200 with an error body', async () => {
    const { accountId, key } = await client();
    h.sim.enqueue('slow_first_byte:900');
    const slow = await post('/v1/images/generations', key, { model: 'img-model', prompt: 'slow' });
    expect(slow.status).toBe(200);
    expect(slow.headers.get('x-gateway-trace')).toMatch(/^req_/);
    const text = await slow.text();
    expect(text.startsWith(' ')).toBe(true);
    expect((JSON.parse(text) as { data: unknown[] }).data).toHaveLength(1);
    expect((await wallet(accountId)).balance).toBe(GRANT - parseUsd(IMAGE_PRICE));

    h.sim.enqueue(['slow_first_byte:600', 'http_500']);
    h.sim.enqueue(['http_502']);
    const failing = await post('/v1/images/generations', key, { model: 'img-model', prompt: 'slow fail' });
    expect(failing.status).toBe(200);
    const error = JSON.parse(await failing.text()) as { error: { message: string; type: string } };
    expect(error.error.type).toBeDefined();
    const w = await wallet(accountId);
    expect(w.balance).toBe(GRANT - parseUsd(IMAGE_PRICE));
    expect(w.held).toBe(0n);
  });
});

describe('a client that leaves', () => {
  it('releases the hold and logs client_disconnected when no channel answered before it left', async () => {
    const { accountId, key } = await client();
    // Both channels would fail; the client is gone before the first one answers.
    h.sim.enqueue(['slow_first_byte:250', 'http_500']);
    h.sim.enqueue('http_500');
    const controller = new AbortController();
    const sent = fetch(`${h.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'img-model', prompt: 'gone' }),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    await expect.poll(() => h.sim.requests.length).toBe(1);
    controller.abort();
    await sent;
    await expect.poll(async () => (await rows(accountId)).length).toBe(1);
    const [row] = await rows(accountId);
    expect(row).toMatchObject({ status: 'error', error_code: 'client_disconnected', cost_usd: '0.00' });
    // No second channel is tried for a client that is gone, and nothing is billed.
    expect(h.sim.requests).toHaveLength(1);
    expect((await wallet(accountId)).held).toBe(0n);
    expect((await wallet(accountId)).balance).toBe(GRANT);
    expect(h.t.logs.filter((line) => line.includes('"request failed"'))).toEqual([]);
  });
});

describe('POST /v1/images/edits', () => {
  it('takes multipart from the openai SDK, forwards the files and bills per image', async () => {
    const { accountId, openai } = await client();
    const png = Buffer.from(PNG_BASE64, 'base64');
    const result = await openai.images.edit({
      model: 'img-model',
      prompt: 'make it blue',
      image: [await toFile(png, 'a.png', { type: 'image/png' }), await toFile(png, 'b.png', { type: 'image/png' })],
      n: 3,
    });
    expect(result.data).toHaveLength(3);
    const sent = h.sim.requests.at(-1)!;
    expect(sent.path).toBe('/img-a/v1/images/edits');
    const body = sent.body as { model: string; prompt: string; n: string; files: Array<{ field: string; filename: string; size: number }> };
    expect(body.model).toBe('img-model-upstream');
    expect(body.prompt).toBe('make it blue');
    expect(body.files.map((f) => f.filename)).toEqual(['a.png', 'b.png']);
    expect(body.files.every((f) => f.size === png.length)).toBe(true);
    expect((await wallet(accountId)).balance).toBe(GRANT - 3n * parseUsd(IMAGE_PRICE));
  });

  it('accepts JSON with a reference URL, and refuses an edit without a reference image', async () => {
    const { key, accountId } = await client();
    const ok = await post('/v1/images/edits', key, { model: 'img-model', prompt: 'edit', image_urls: ['https://a.example/x.png'] });
    expect(ok.status).toBe(200);
    const missing = await post('/v1/images/edits', key, { model: 'img-model', prompt: 'edit' });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: unknown }).error).toMatchObject({ code: 'invalid_request' });
    const form = new FormData();
    form.append('model', 'img-model');
    form.append('prompt', 'no file');
    const multipartMissing = await fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(multipartMissing.status).toBe(400);
    expect(h.sim.requests).toHaveLength(1);
    expect((await wallet(accountId)).balance).toBe(GRANT - parseUsd(IMAGE_PRICE));
  });

  it('refuses a body over 95 MB with 413 request_too_large, multipart or JSON, before any upstream call', async () => {
    const { key, accountId } = await client();
    const big = Buffer.alloc(95 * 1024 * 1024 + 1024, 1);
    const form = new FormData();
    form.append('model', 'img-model');
    form.append('prompt', 'too big');
    form.append('image', new Blob([big], { type: 'image/png' }), 'big.png');
    const multipart = await fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(multipart.status).toBe(413);
    expect(((await multipart.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
    const half = Buffer.alloc(48 * 1024 * 1024, 2);
    const twoFiles = new FormData();
    twoFiles.append('model', 'img-model');
    twoFiles.append('prompt', 'too big together');
    twoFiles.append('image[]', new Blob([half], { type: 'image/png' }), 'a.png');
    twoFiles.append('image[]', new Blob([half], { type: 'image/png' }), 'b.png');
    const together = await fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: twoFiles });
    expect(together.status).toBe(413);
    const json = await post('/v1/images/edits', key, { model: 'img-model', prompt: 'too big', image: `data:image/png;base64,${big.toString('base64')}` });
    expect(json.status).toBe(413);
    expect(h.sim.requests).toHaveLength(0);
    expect((await wallet(accountId)).held).toBe(0n);
  });
});
