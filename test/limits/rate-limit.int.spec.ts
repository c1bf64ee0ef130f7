import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chatConfig, type ChatHarness } from '../chat/support';
import { startSimulator } from '../../src/simulator';
import { startTestGateway } from '../support/gateway';
import { testDatabase } from '../support/storage';
import { client, limiterOptions, rateHeaders, setLimits, startLimitsHarness, RATE_HEADERS } from './support';

let h: ChatHarness;
beforeAll(async () => {
  h = await startLimitsHarness({ chatTimeoutMs: 10_000, rateLimits: limiterOptions() });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

async function limited(rpm: number | null, concurrency: number | null) {
  const { accountId, key } = await h.t.accountWithKey();
  if (rpm !== null || concurrency !== null) await setLimits(h.t, accountId, rpm, concurrency);
  return { accountId, key, api: client(h.baseUrl, key) };
}

const integer = /^\d+$/;
const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; message: string } }).error;

describe('per-account rate limits over HTTP', () => {
  it('refuses the request past rpm with 429 in the chat shape, Retry-After and all five headers', async () => {
    const { api } = await limited(1, 5);
    const ok = await api.chat();
    expect(ok.status).toBe(200);
    await ok.json();
    expect(rateHeaders(ok)).toMatchObject({
      'x-ratelimit-limit-requests': '1',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-limit-concurrency': '5',
      'x-ratelimit-remaining-concurrency': '4',
    });
    expect(Number(ok.headers.get('x-ratelimit-reset-requests'))).toBeGreaterThanOrEqual(1);
    expect(Number(ok.headers.get('x-ratelimit-reset-requests'))).toBeLessThanOrEqual(60);

    const refused = await api.chat();
    expect(refused.status).toBe(429);
    const body = await refused.json();
    expect(body).toEqual({ error: { message: expect.stringContaining('1 requests per minute'), type: 'rate_limit_error', code: 'rate_limit_exceeded' } });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const headers = rateHeaders(refused);
    for (const name of RATE_HEADERS) expect(headers[name], name).toMatch(integer);
    expect(headers).toMatchObject({ 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-limit-concurrency': '5' });
    expect(headers['x-ratelimit-reset-requests']).toBe(String(retryAfter));
    // Refused before any upstream call.
    expect(h.sim.requests).toHaveLength(1);
  });

  it('answers 429 in the messages and generate-content shapes', async () => {
    const { api } = await limited(1, null);
    expect((await api.messages()).status).toBe(200);
    const messages = await api.messages();
    expect(messages.status).toBe(429);
    expect(await messages.json()).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringContaining('requests per minute') } });
    expect(messages.headers.get('retry-after')).toMatch(integer);

    const generate = await api.generate();
    expect(generate.status).toBe(429);
    expect(await generate.json()).toEqual({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: expect.stringContaining('requests per minute') } });
    // An unlimited dimension has no headers.
    expect(rateHeaders(generate)).toMatchObject({ 'x-ratelimit-limit-requests': '1', 'x-ratelimit-limit-concurrency': null, 'x-ratelimit-remaining-concurrency': null });
  });

  it('counts GET /v1/models, not the key balance, the billing views, other routes, or failed authentication', async () => {
    const { accountId, api } = await limited(null, null);
    const spare = await h.t.admin('POST', `/accounts/${accountId}/keys`, { name: 'revoked' });
    await h.t.admin('POST', `/keys/${spare.json().id}/revoke`);
    await setLimits(h.t, accountId, 1, null);

    for (let i = 0; i < 3; i++) {
      for (const path of ['/v1/key/balance', '/v1/dashboard/billing/subscription', '/v1/dashboard/billing/usage', '/api/v1/usage']) {
        const response = await api.get(path);
        expect(response.status, path).toBe(200);
        expect(response.headers.get('x-ratelimit-limit-requests'), path).toBeNull();
      }
      const revoked = await client(h.baseUrl, spare.json().key).get('/v1/models');
      expect(revoked.status).toBe(401);
      expect(revoked.headers.get('x-ratelimit-limit-requests')).toBeNull();
    }
    const models = await api.get('/v1/models');
    expect(models.status).toBe(200);
    expect(models.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const again = await api.get('/v1/models');
    expect(again.status).toBe(429);
    expect((await errorOf(again)).code).toBe('rate_limit_exceeded');
  });

  it('adds no headers while the account has no limit', async () => {
    const { api } = await limited(null, null);
    const response = await api.chat();
    expect(response.status).toBe(200);
    for (const name of RATE_HEADERS) expect(response.headers.get(name)).toBeNull();
  });

  it('passes an upstream 429 through without x-ratelimit headers', async () => {
    const { api } = await limited(10, 2);
    h.sim.enqueue('http_429');
    const upstream = await api.chat();
    expect(upstream.status).toBe(429);
    expect((await errorOf(upstream)).code).toBe('rate_limit_exceeded');
    for (const name of RATE_HEADERS) expect(upstream.headers.get(name), name).toBeNull();
    // The next success has them again, and counts both requests.
    const ok = await api.chat();
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-remaining-requests')).toBe('8');
  });

  it('holds a concurrency slot for a whole stream and frees it when the stream completes', async () => {
    const { api } = await limited(null, 1);
    const stream = await api.chat('one two three', {}, { stream: true });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    // Headers set before the reply was hijacked reach the client.
    expect(rateHeaders(stream)).toMatchObject({ 'x-ratelimit-limit-concurrency': '1', 'x-ratelimit-remaining-concurrency': '0', 'x-ratelimit-limit-requests': null });
    const text = await stream.text();
    expect(text).toContain('[DONE]');
    await expect.poll(async () => (await api.get('/v1/models')).status, { timeout: 5000 }).toBe(200);
  });

  it('refuses a second request while a stream is in flight, and frees the slot when the client disconnects', async () => {
    const { api } = await limited(null, 1);
    h.sim.enqueue(['slow_stream:200', 'reply_tokens:200']);
    const abort = new AbortController();
    const stream = await api.chat('tell me a long story', { signal: abort.signal }, { stream: true });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    await reader.read();

    const busy = await api.chat();
    expect(busy.status).toBe(429);
    expect((await errorOf(busy)).message).toContain('concurrent requests');
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(rateHeaders(busy)).toMatchObject({ 'x-ratelimit-limit-concurrency': '1', 'x-ratelimit-remaining-concurrency': '0' });

    abort.abort();
    await reader.cancel().catch(() => {});
    await expect.poll(async () => (await api.get('/v1/models')).status, { timeout: 5000 }).toBe(200);
  });
});

describe.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)('two gateway instances on one database and one Redis', () => {
  it('enforce rpm and concurrency together, and pick up limits set through the other within about a second', async () => {
    const sim = await startSimulator();
    const db = await testDatabase();
    const rateLimits = limiterOptions();
    const a = await startTestGateway({ config: chatConfig(sim), db, rateLimits });
    const b = await startTestGateway({ config: chatConfig(sim), db: { ...db, sql: db.another() }, rateLimits });
    try {
      const urls = [];
      for (const t of [a, b]) {
        await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
        urls.push(`http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`);
      }
      const { accountId, key } = await a.accountWithKey();
      const onA = client(urls[0]!, key);
      const onB = client(urls[1]!, key);
      // B caches the wallet before the limits exist.
      expect((await onB.get('/v1/models')).headers.get('x-ratelimit-limit-requests')).toBeNull();

      await setLimits(a, accountId, 3, null);
      // Polling on B: the first answer with headers is the first request B counted.
      await expect.poll(async () => (await onB.get('/v1/models')).headers.get('x-ratelimit-limit-requests'), { timeout: 5000, interval: 200 }).toBe('3');
      expect((await onA.get('/v1/models')).headers.get('x-ratelimit-remaining-requests')).toBe('1');
      expect((await onB.get('/v1/models')).status).toBe(200);
      expect((await onA.get('/v1/models')).status).toBe(429);
      expect((await onB.get('/v1/models')).status).toBe(429);

      await setLimits(a, accountId, null, 1);
      await expect.poll(async () => (await onB.get('/v1/models')).headers.get('x-ratelimit-limit-concurrency'), { timeout: 5000, interval: 200 }).toBe('1');
      sim.enqueue(['slow_stream:200', 'reply_tokens:200']);
      const abort = new AbortController();
      const stream = await onA.chat('a long story', { signal: abort.signal }, { stream: true });
      expect(stream.status).toBe(200);
      const reader = stream.body!.getReader();
      await reader.read();
      const busy = await onB.get('/v1/models');
      expect(busy.status).toBe(429);
      expect((await errorOf(busy)).message).toContain('concurrent requests');
      abort.abort();
      await reader.cancel().catch(() => {});
      await expect.poll(async () => (await onB.get('/v1/models')).status, { timeout: 5000 }).toBe(200);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
      await sim.close();
    }
  });
});
