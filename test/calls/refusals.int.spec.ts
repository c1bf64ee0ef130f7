import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { gzipSync } from 'node:zlib';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/commands/ledger';
import { parseUsd } from '../../src/money/usd';
import { KeyCipher } from '../../src/secrets/api-key';
import { KeyVault } from '../../src/secrets/key-vault';
import { limiterOptions, setLimits } from '../limits/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { rejectedCall } from '../support/call-record';
import { sendPartial } from '../intake/support';
import { callLog, callsConfig, summary, type LogRow } from './support';

// Issue 23, finding 3: every refusal of a known key at submission is a call-log row (`rejected`,
// cost 0), on every billable endpoint, whichever layer refused it; usage and CSV count it.

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startSimulatedGateway(callsConfig, { rateLimits: limiterOptions() });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

function api(key: string) {
  const send = (path: string, body: string | object, headers: Record<string, string> = {}) =>
    fetch(`${h.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  return {
    send,
    chat: () => send('/v1/chat/completions', { model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] }),
    messages: () => send('/v1/messages', { model: 'msg-model', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] }),
    responses: () => send('/v1/responses', { model: 'resp-model', input: 'hello' }),
    generate: (method = 'generateContent') => send(`/v1beta/models/gem-model:${method}`, { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    image: (idempotencyKey?: string, prompt = 'a boat') =>
      send('/v1/images/generations', { model: 'img-model', prompt }, idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
    models: () => fetch(`${h.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${key}` } }),
  };
}

describe('refusals of a known key have their call-log row', () => {
  it("429 for the account's requests per minute, on each protocol and on images (not on free routes)", async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await setLimits(h.t, accountId, 1, null);
    const a = api(key);
    expect((await a.chat()).status).toBe(200);
    for (const refused of [a.chat(), a.messages(), a.responses(), a.generate(), a.image()]) expect((await refused).status).toBe(429);
    // A limited route that is not a call (the model list) has no row.
    expect((await a.models()).status).toBe(429);
    const rows = await callLog(h, accountId, key);
    // Refused before the body is parsed: the row names the model of the path, or of the body as it was read for the row.
    expect(summary(rows)).toEqual(
      summary([
        { status: 'success', error_code: null, model: 'chat-model' },
        ...['chat-model', 'msg-model', 'resp-model', 'gem-model', 'img-model'].map((model) => ({ status: 'rejected', error_code: 'rate_limit_exceeded', model })),
      ]),
    );
    for (const row of rows) expect(row.key_prefix).toMatch(/^sk-/);
    for (const row of rows.filter((r) => r.status === 'rejected')) expect(row.cost_usd).toBe('0.00');
    expect(rows.filter((r) => r.unit_type === 'image')).toHaveLength(1);
  });

  it('429 for concurrency while another call is in flight', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await setLimits(h.t, accountId, null, 1);
    const a = api(key);
    h.sim.enqueue('slow_first_byte:1500');
    const slow = a.image();
    await expect.poll(() => h.sim.requests.length).toBe(1);
    expect((await a.chat()).status).toBe(429);
    expect((await slow).status).toBe(200);
    expect(summary(await callLog(h, accountId, key))).toEqual(['rejected rate_limit_exceeded chat-model', 'success - img-model']);
  });

  it('402 at authentication (balance at 0), 400 for an unreadable body, 404 for an unknown method', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const a = api(key);
    expect((await a.send('/v1/chat/completions', '{"model": "chat-model", "messages": [')).status).toBe(400);
    expect((await a.generate('embedContent')).status).toBe(404);
    // Spend the whole balance: every billable call is refused at authentication from now on.
    const ledger = h.t.gateway.ledger;
    expect((await ledger.reserve(accountId, { holdId: `drain-${accountId}`, amount: parseUsd('40.44'), keyId: null, purpose: 'test', ttlSeconds: 60 })).ok).toBe(true);
    expect((await ledger.settle(accountId, `drain-${accountId}`, parseUsd('40.44'))).ok).toBe(true);
    await expect.poll(async () => (await a.chat()).status, { timeout: 5000 }).toBe(402);
    expect((await a.generate()).status).toBe(402);
    expect((await a.image()).status).toBe(402);
    const rows = await callLog(h, accountId, key);
    const quota = rows.filter((r) => r.error_code === 'quota_exceeded');
    expect(quota.length).toBeGreaterThanOrEqual(3);
    expect(summary(rows.filter((r) => r.error_code !== 'quota_exceeded'))).toEqual(['rejected invalid_request ', 'rejected not_found gem-model']);
    expect(new Set(quota.map((r) => r.model))).toEqual(new Set(['chat-model', 'gem-model', 'img-model']));
  });

  it('400 and 409 of Idempotency-Key: a malformed key, another body under a key, a key in flight', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const a = api(key);
    expect((await a.image('has space')).status).toBe(400);
    expect((await a.image('reuse')).status).toBe(200);
    expect((await a.image('reuse', 'another prompt')).status).toBe(409);
    h.sim.enqueue('slow_first_byte:1500');
    const slow = a.image('slow');
    await expect.poll(() => h.sim.requests.length).toBe(2);
    const busy = await a.image('slow');
    expect(busy.status).toBe(409);
    expect((await slow).status).toBe(200);
    // A replay is no call of its own: no row.
    expect((await a.image('reuse')).headers.get('idempotency-replayed')).toBe('true');
    expect(summary(await callLog(h, accountId, key))).toEqual(
      [
        'rejected invalid_idempotency_key img-model',
        'rejected idempotency_key_reuse img-model',
        'rejected idempotency_in_flight img-model',
        'success - img-model',
        'success - img-model',
      ].sort(),
    );
  });

  it('no row without a known key (401): there is no account to record it in', async () => {
    const { accountId, key, keyId } = await h.t.accountWithKey();
    const unknown = `sk-${'a'.repeat(73)}`;
    expect((await api(unknown).chat()).status).toBe(401);
    expect((await h.t.admin('PATCH', `/keys/${keyId}`, { enabled: false })).statusCode).toBe(200);
    await expect.poll(async () => (await api(key).chat()).status, { timeout: 5000 }).toBe(401);
    await h.t.gateway.runner.catchUpToHead();
    const rows = await h.t.db.sql.query('SELECT 1 FROM call_log WHERE account_id = $1', [accountId]);
    expect(rows).toHaveLength(0);
  });
});

// Issue 31, item 7d: a call refused at authentication (402) or by the rate limits (429) is refused before its
// body is read; its row still names the model the client asked for, read from the body for the row alone.
describe('a 402 or 429 row names the model asked for (official SDKs)', () => {
  const sdks = (key: string) => ({
    openai: new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }),
    anthropic: new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 }),
    gemini: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } }),
  });
  const statusOf = (call: Promise<unknown>) => call.then(() => 200, (e: unknown) => (e as { status?: number }).status);
  const rejected = async (accountId: string, key: string, code: string) =>
    (await callLog(h, accountId, key)).filter((r) => r.status === 'rejected' && r.error_code === code).map((r) => r.model).sort();

  it('429: chat, responses and images (openai), messages (anthropic), generate-content (genai)', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await setLimits(h.t, accountId, 1, null);
    const { openai, anthropic, gemini } = sdks(key);
    expect((await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'first' }] })).choices).toHaveLength(1);
    const refused = await Promise.all([
      statusOf(openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] })),
      statusOf(openai.responses.create({ model: 'resp-model', input: 'hello' })),
      statusOf(openai.images.generate({ model: 'img-model', prompt: 'a boat' })),
      statusOf(anthropic.messages.create({ model: 'msg-model', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] })),
      statusOf(gemini.models.generateContent({ model: 'gem-model', contents: 'hello' })),
    ]);
    expect(refused).toEqual([429, 429, 429, 429, 429]);
    expect(await rejected(accountId, key, 'rate_limit_exceeded')).toEqual(['chat-model', 'gem-model', 'img-model', 'msg-model', 'resp-model']);
  });

  it('429: the model after a large prompt (the order the Python SDKs send), and none for a body that names none', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await setLimits(h.t, accountId, 1, null);
    const a = api(key);
    expect((await a.chat()).status).toBe(200);
    const messages = [{ role: 'user', content: 'long '.repeat(400_000) }];
    expect((await a.send('/v1/chat/completions', `{"messages": ${JSON.stringify(messages)}, "model": "chat-model"}`)).status).toBe(429);
    expect((await a.send('/v1/chat/completions', { messages })).status).toBe(429);
    expect(await rejected(accountId, key, 'rate_limit_exceeded')).toEqual(['', 'chat-model']);
  });

  it('402: chat (openai) and messages (anthropic) refused for the balance', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const ledger = h.t.gateway.ledger;
    expect((await ledger.reserve(accountId, { holdId: `drain-${accountId}`, amount: parseUsd('40.44'), keyId: null, purpose: 'test', ttlSeconds: 60 })).ok).toBe(true);
    expect((await ledger.settle(accountId, `drain-${accountId}`, parseUsd('40.44'))).ok).toBe(true);
    const { openai, anthropic } = sdks(key);
    const chat = () => openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] });
    await expect.poll(() => statusOf(chat()), { timeout: 5000 }).toBe(402);
    expect(await statusOf(anthropic.messages.create({ model: 'msg-model', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] }))).toBe(402);
    const models = await rejected(accountId, key, 'quota_exceeded');
    expect(new Set(models)).toEqual(new Set(['chat-model', 'msg-model']));
  });

  it('402: a multipart image edit (openai) names its model field, an over-size body the model read before its limit; a compressed body says why it names none', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const ledger = h.t.gateway.ledger;
    expect((await ledger.reserve(accountId, { holdId: `drain-${accountId}`, amount: parseUsd('40.44'), keyId: null, purpose: 'test', ttlSeconds: 60 })).ok).toBe(true);
    expect((await ledger.settle(accountId, `drain-${accountId}`, parseUsd('40.44'))).ok).toBe(true);
    const { openai } = sdks(key);
    await expect.poll(() => statusOf(openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] })), { timeout: 5000 }).toBe(402);

    // The file part comes before the model field: the scan reads past it.
    const image = await toFile(Buffer.alloc(256 * 1024, 7), 'in.png', { type: 'image/png' });
    expect(await statusOf(openai.images.edit({ image, prompt: 'make it blue', model: 'img-model' }))).toBe(402);
    // Over the chat route's 8 MB, the model first: refused at authentication, before the size is checked.
    const big = Buffer.from(JSON.stringify({ model: 'oversize-model', messages: [{ role: 'user', content: 'x'.repeat(9 * 1024 * 1024) }] }));
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway.test\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${big.length}\r\n\r\n`;
    expect((await sendPartial(h.baseUrl, head, big)).status).toBe(402);
    const gzipped = await fetch(`${h.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] })),
    });
    expect(gzipped.status).toBe(402);

    const rows = (await callLog(h, accountId, key)) as Array<LogRow & { error_message: string }>;
    const quota = rows.filter((r) => r.error_code === 'quota_exceeded');
    expect(quota.filter((r) => r.unit_type === 'image').map((r) => r.model)).toEqual(['img-model']);
    const chat = quota.filter((r) => r.unit_type !== 'image');
    expect(chat.filter((r) => r.model === '')).toEqual([expect.objectContaining({ error_message: expect.stringContaining('its body is compressed (Content-Encoding: gzip)') })]);
    expect(chat.filter((r) => r.model === 'oversize-model')).toHaveLength(1);
  });
});

describe('the refusal budget', () => {
  it('records refusals up to the per-account budget and counts the rest', async () => {
    const warnings: Array<Record<string, unknown>> = [];
    const { storage } = h.t.gateway;
    const vault = new KeyVault(storage.sql, new KeyCipher('ab'.repeat(32)));
    const ledger = new Ledger(storage.store, vault, { refusalsPerMinute: 2, warn: (fields) => warnings.push(fields) });
    const { accountId } = await h.t.accountWithKey();
    const call = (n: number) => rejectedCall({ request_id: `req_budget_${accountId}_${n}`, error_code: 'rate_limit_exceeded', error_message: 'x' });
    const recorded = [];
    for (let n = 0; n < 5; n++) recorded.push(await ledger.recordRejected(accountId, call(n)));
    expect(recorded.map((r) => r.ok && r.recorded)).toEqual([true, true, false, false, false]);
    expect(warnings).toEqual([{ accountId, unrecorded: 1 }]);
    const events = await storage.store.readStream(`wallet-${accountId}`);
    expect(events.filter((e) => e.type === 'CallRejected')).toHaveLength(2);
  });
});
