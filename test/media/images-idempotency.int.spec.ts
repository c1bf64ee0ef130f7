import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { PNG_BASE64 } from '../../src/simulator';
import { IMAGE_PRICE, startMediaHarness, type MediaHarness } from './support';

let h: MediaHarness;
// A small replay limit: a b64_json answer of 10 images is over it, a URL answer of 2 is not.
const MAX_STORED = 1000;
beforeAll(async () => {
  h = await startMediaHarness({ idempotencyMaxStoredBytes: MAX_STORED, imageTimings: { keepAliveAfterMs: 300, keepAliveEveryMs: 100 } });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const GRANT = parseUsd('40.44');
const balance = async (accountId: string) => (await h.t.gateway.ledger.wallet(accountId)).balance;

const post = (key: string, body: unknown, idempotencyKey?: string, path = '/v1/images/generations') =>
  fetch(`${h.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(idempotencyKey !== undefined ? { 'idempotency-key': idempotencyKey } : {}) },
    body: JSON.stringify(body),
  });

const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; type: string; message: string } }).error;

describe('Idempotency-Key on the image endpoints', () => {
  it('replays the first 2xx byte for byte with Idempotency-Replayed: no new upstream call, no new charge', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'img-model', prompt: 'a boat', n: 2 };
    const first = await post(key, body, 'intent-1');
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    const firstText = await first.text();
    // Key order does not make another request.
    const again = await post(key, { n: 2, prompt: 'a boat', model: 'img-model' }, 'intent-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toMatch(/^application\/json/);
    expect(again.headers.get('x-gateway-trace')).toMatch(/^req_/);
    expect(again.headers.get('x-gateway-trace')).not.toBe(first.headers.get('x-gateway-trace'));
    expect(await again.text()).toBe(firstText);
    expect(h.sim.requests).toHaveLength(1);
    expect(await balance(accountId)).toBe(GRANT - 2n * parseUsd(IMAGE_PRICE));
  });

  it('is scoped to the account: another key of the account replays, another account runs anew', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const second = await h.t.admin('POST', `/accounts/${accountId}/keys`, { name: 'second' });
    const otherKey = second.json().key as string;
    const body = { model: 'img-model', prompt: 'shared' };
    expect((await post(key, body, 'acct-scope')).status).toBe(200);
    const sameAccount = await post(otherKey, body, 'acct-scope');
    expect(sameAccount.headers.get('idempotency-replayed')).toBe('true');
    const other = await h.t.accountWithKey();
    const otherAccount = await post(other.key, body, 'acct-scope');
    expect(otherAccount.status).toBe(200);
    expect(otherAccount.headers.get('idempotency-replayed')).toBeNull();
    expect(h.sim.requests).toHaveLength(2);
  });

  it('refuses a different body with 409 idempotency_key_reuse, and a malformed key with 400', async () => {
    const { key } = await h.t.accountWithKey();
    expect((await post(key, { model: 'img-model', prompt: 'one' }, 'reuse-1')).status).toBe(200);
    const reuse = await post(key, { model: 'img-model', prompt: 'two' }, 'reuse-1');
    expect(reuse.status).toBe(409);
    expect(await errorOf(reuse)).toMatchObject({ code: 'idempotency_key_reuse', type: 'invalid_request_error' });
    for (const bad of ['', 'has space', 'x'.repeat(201), 'tab\tkey', 'é']) {
      const response = await post(key, { model: 'img-model', prompt: 'one' }, bad);
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_idempotency_key');
      expect(response.headers.get('x-gateway-trace')).toMatch(/^req_/);
    }
    expect((await post(key, { model: 'img-model', prompt: 'one' }, 'x'.repeat(200))).status).toBe(200);
    expect(h.sim.requests).toHaveLength(2);
  });

  it("checks the replaying key before replaying: a model it may not use is 400, its spend cap 402, as a new call's", async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'img-model', prompt: 'only for some keys', n: 2 };
    const first = await post(key, body, 'checked');
    expect(first.status).toBe(200);
    const firstText = await first.text();
    const newKey = async (fields: object) => (await h.t.admin('POST', `/accounts/${accountId}/keys`, { name: 'other', ...fields })).json().key as string;

    const limited = await post(await newKey({ allowed_models: ['grid-model'] }), body, 'checked');
    expect(limited.status).toBe(400);
    expect(limited.headers.get('idempotency-replayed')).toBeNull();
    expect(await errorOf(limited)).toMatchObject({ code: 'model_not_allowed', message: expect.stringContaining('img-model') });

    // Two images at 0.04 need 0.08 of the cap; 0.05 is left.
    const capped = await post(await newKey({ spend_cap_usd: '0.05' }), body, 'checked');
    expect(capped.status).toBe(402);
    expect(await errorOf(capped)).toMatchObject({ code: 'quota_exceeded', message: expect.stringContaining('spend cap') });

    const allowed = await post(await newKey({ allowed_models: ['img-model'], spend_cap_usd: '0.08' }), body, 'checked');
    expect(allowed.headers.get('idempotency-replayed')).toBe('true');
    expect(await allowed.text()).toBe(firstText);
    expect(h.sim.requests).toHaveLength(1);
    expect(await balance(accountId)).toBe(GRANT - 2n * parseUsd(IMAGE_PRICE));
  });

  it('does not remember failures: after an upstream 400 the same key runs again', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    h.sim.enqueue('http_400');
    const failed = await post(key, { model: 'img-model', prompt: 'retry me' }, 'fail-then-ok');
    expect(failed.status).toBe(400);
    const ok = await post(key, { model: 'img-model', prompt: 'retry me' }, 'fail-then-ok');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('idempotency-replayed')).toBeNull();
    expect(h.sim.requests).toHaveLength(2);
    expect(await balance(accountId)).toBe(GRANT - parseUsd(IMAGE_PRICE));
  });

  it('answers 409 idempotency_response_not_cached for a b64_json answer too large to keep, without charging again', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const body = { model: 'img-model', prompt: 'big', n: 10, response_format: 'b64_json' };
    const first = await post(key, body, 'too-big');
    expect(first.status).toBe(200);
    expect(((await first.json()) as { data: Array<{ b64_json: string }> }).data[0]!.b64_json).toBe(PNG_BASE64);
    const again = await post(key, body, 'too-big');
    expect(again.status).toBe(409);
    expect((await errorOf(again)).code).toBe('idempotency_response_not_cached');
    expect(h.sim.requests).toHaveLength(1);
    expect(await balance(accountId)).toBe(GRANT - 10n * parseUsd(IMAGE_PRICE));
  });

  it('replays a multipart edit sent again with a new boundary, and tells a changed file apart', async () => {
    const { key } = await h.t.accountWithKey();
    const png = Buffer.from(PNG_BASE64, 'base64');
    const form = (bytes: Buffer) => {
      const f = new FormData();
      f.append('model', 'img-model');
      f.append('prompt', 'edit me');
      f.append('image', new Blob([bytes], { type: 'image/png' }), 'in.png');
      return f;
    };
    const send = (bytes: Buffer) =>
      fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'edit-1' }, body: form(bytes) });
    const first = await send(png);
    expect(first.status).toBe(200);
    const firstText = await first.text();
    const again = await send(png);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    const changed = await send(Buffer.concat([png, Buffer.from([0])]));
    expect(changed.status).toBe(409);
    expect((await errorOf(changed)).code).toBe('idempotency_key_reuse');
    expect(h.sim.requests).toHaveLength(1);
  });

  it('remembers an answer written after the keep-alive point', async () => {
    const { key } = await h.t.accountWithKey();
    h.sim.enqueue('slow_first_byte:800');
    const body = { model: 'img-model', prompt: 'slow and kept' };
    const first = await post(key, body, 'slow-1');
    expect(first.status).toBe(200);
    const firstJson = JSON.parse(await first.text()) as unknown;
    const again = await post(key, body, 'slow-1');
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(JSON.parse(await again.text())).toEqual(firstJson);
    expect(h.sim.requests).toHaveLength(1);
  });

  it('without the header nothing is deduplicated', async () => {
    const { key } = await h.t.accountWithKey();
    const body = { model: 'img-model', prompt: 'twice' };
    expect((await post(key, body)).status).toBe(200);
    expect((await post(key, body)).status).toBe(200);
    expect(h.sim.requests).toHaveLength(2);
  });
});
