import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError, sendError } from '../../src/http/errors';
import type { Caller } from '../../src/http/plugins/auth';
import { completeHijacked, idempotencyPlugin } from '../../src/http/plugins/idempotency';
import { IdempotencyStore } from '../../src/idempotency/store';
import { testDatabase, type TestDatabase } from '../support/storage';

let db: TestDatabase;
let app: FastifyInstance;
let clock = 1_800_000_000;
let runs = 0;
let serial = 0;
const gates: Array<() => void> = [];
const key = () => `k-${++serial}-${Date.now()}`;

/** A stand-in for the auth plugin: the account comes from a test header. */
function stubCaller(accountId: string): Caller {
  return { accountId, keyId: 'key_test' } as unknown as Caller;
}

async function buildTestApp(store: IdempotencyStore): Promise<FastifyInstance> {
  const app = Fastify({ genReqId: () => `req_${++serial}` });
  app.setErrorHandler((error, request, reply) =>
    sendError(request, reply, error instanceof GatewayError ? error : new GatewayError('internal_error', 'internal error')),
  );
  app.decorateRequest('caller', null);
  app.addHook('onRequest', async (request) => {
    const account = request.headers['x-test-account'];
    request.caller = stubCaller(typeof account === 'string' ? account : 'acct_1');
  });
  await app.register(idempotencyPlugin, { store });

  type Body = { prompt?: string; fail?: boolean; crash?: boolean; wait?: boolean; big?: boolean };
  const billable = { config: { auth: 'key', shape: 'chat', idempotent: true } } as const;
  app.post<{ Body: Body }>('/v1/billable', billable, async (request, reply) => {
    runs += 1;
    if (request.body.wait) await new Promise<void>((resolve) => gates.push(resolve));
    if (request.body.crash) throw new Error('boom');
    if (request.body.fail) return sendError(request, reply, new GatewayError('upstream_timeout', 'upstream timed out'));
    reply.header('x-gateway-trace', request.id);
    return { run: runs, prompt: request.body.prompt, data: request.body.big ? 'x'.repeat(2048) : 'small' };
  });
  app.post('/v1/messages-like', { config: { auth: 'key', shape: 'messages', idempotent: true } }, async () => ({ ok: true }));
  app.post('/v1/free', { config: { auth: 'key', shape: 'chat' } }, async () => ({ run: ++runs }));
  app.post('/v1/stream', billable, async (_request, reply) => {
    runs += 1;
    return reply.type('text/plain').send(Readable.from(['a', 'b']));
  });
  // A multipart route's stand-in: the "boundary" differs per send, so the route fingerprints the parts.
  app.post<{ Body: { boundary: string; prompt: string; file: string } }>(
    '/v1/parts',
    {
      ...billable,
      preValidation: async (request) => {
        const { prompt, file } = request.body;
        request.idempotencyFingerprintParts = { fields: { prompt }, files: [{ name: 'image', filename: 'a.png', data: Buffer.from(file) }] };
      },
    },
    async () => ({ run: ++runs }),
  );
  // The keep-alive mode of slow image calls: the handler writes the response itself.
  app.post<{ Body: Body }>('/v1/hijacked', billable, async (request, reply) => {
    runs += 1;
    reply.hijack();
    const body = request.body.fail ? '{"error":{"message":"upstream failed","type":"api_error","code":"upstream_error"}}' : `{"run":${runs}}`;
    reply.raw.writeHead(200, { 'content-type': 'application/json' });
    reply.raw.write(' ');
    // Recorded before the end of the response, so an immediate retry finds it.
    await completeHijacked(request, request.body.fail ? 502 : 200, 'application/json', body);
    reply.raw.end(body);
  });
  app.post('/v1/hijacked-forgetful', billable, async (_request, reply) => {
    runs += 1;
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'application/json' });
    reply.raw.end('{}');
  });
  return app;
}

beforeAll(async () => {
  db = await testDatabase();
  const store = new IdempotencyStore(db.sql, { now: () => clock, maxStoredBytes: 1024 });
  await store.migrate();
  app = await buildTestApp(store);
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await db.drop();
});
beforeEach(() => {
  runs = 0;
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, payload: body as object, headers: { 'content-type': 'application/json', ...headers } });

describe('idempotency plugin', () => {
  it('replays the first 2xx byte for byte, with Idempotency-Replayed and the new trace id, without running again', async () => {
    const k = key();
    const first = await post('/v1/billable', { prompt: 'fox', model: 'm' }, { 'idempotency-key': k });
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotency-replayed']).toBeUndefined();
    // Same body with its keys in another order: the same request.
    const again = await post('/v1/billable', { model: 'm', prompt: 'fox' }, { 'idempotency-key': k, 'x-api-key': 'another key of the account' });
    expect(again.statusCode).toBe(200);
    expect(again.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.headers['x-gateway-trace']).toMatch(/^req_/);
    expect(again.headers['x-gateway-trace']).not.toBe(first.headers['x-gateway-trace']);
    expect(runs).toBe(1);
  });

  it('without the header nothing is deduplicated', async () => {
    await post('/v1/billable', { prompt: 'fox' });
    await post('/v1/billable', { prompt: 'fox' });
    expect(runs).toBe(2);
  });

  it('a route that is not idempotent ignores the header, even a bad one', async () => {
    const response = await post('/v1/free', {}, { 'idempotency-key': 'has space' });
    expect(response.statusCode).toBe(200);
  });

  it('refuses a bad key with 400 invalid_idempotency_key in the route’s error shape, before running', async () => {
    const chat = await post('/v1/billable', { prompt: 'fox' }, { 'idempotency-key': 'x'.repeat(201) });
    expect(chat.statusCode).toBe(400);
    expect(chat.json()).toEqual({ error: { message: expect.stringMatching(/^Invalid Idempotency-Key/), type: 'invalid_request_error', code: 'invalid_idempotency_key' } });
    const messages = await post('/v1/messages-like', {}, { 'idempotency-key': '' });
    expect(messages.statusCode).toBe(400);
    expect(messages.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/^Invalid Idempotency-Key/) } });
    expect(runs).toBe(0);
  });

  it('the same key with a different body: 409 idempotency_key_reuse', async () => {
    const k = key();
    await post('/v1/billable', { prompt: 'fox' }, { 'idempotency-key': k });
    const reuse = await post('/v1/billable', { prompt: 'owl' }, { 'idempotency-key': k });
    expect(reuse.statusCode).toBe(409);
    expect(reuse.json().error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_reuse' });
    expect(runs).toBe(1);
  });

  it('a duplicate while the first still runs: 409 idempotency_in_flight; afterwards, the replay', async () => {
    const k = key();
    const first = post('/v1/billable', { prompt: 'fox', wait: true }, { 'idempotency-key': k });
    while (gates.length === 0) await new Promise((r) => setTimeout(r, 5));
    const duplicate = await post('/v1/billable', { prompt: 'fox', wait: true }, { 'idempotency-key': k });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().error.code).toBe('idempotency_in_flight');
    gates.shift()!();
    expect((await first).statusCode).toBe(200);
    const replay = await post('/v1/billable', { prompt: 'fox', wait: true }, { 'idempotency-key': k });
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(runs).toBe(1);
  });

  it('a non-2xx answer or a thrown error frees the key: the retry runs', async () => {
    for (const failure of [{ fail: true }, { crash: true }]) {
      const k = key();
      const failed = await post('/v1/billable', { prompt: 'fox', ...failure }, { 'idempotency-key': k });
      expect(failed.statusCode).toBeGreaterThanOrEqual(500);
      const retry = await post('/v1/billable', { prompt: 'fox' }, { 'idempotency-key': k });
      expect(retry.statusCode).toBe(200);
      expect(retry.headers['idempotency-replayed']).toBeUndefined();
    }
    expect(runs).toBe(4);
  });

  it('a 2xx too large to keep: the retry gets 409 idempotency_response_not_cached and nothing runs', async () => {
    const k = key();
    expect((await post('/v1/billable', { prompt: 'fox', big: true }, { 'idempotency-key': k })).statusCode).toBe(200);
    const retry = await post('/v1/billable', { prompt: 'fox', big: true }, { 'idempotency-key': k });
    expect(retry.statusCode).toBe(409);
    expect(retry.json().error.code).toBe('idempotency_response_not_cached');
    expect(runs).toBe(1);
  });

  it('a streamed 2xx cannot be replayed but is never run twice', async () => {
    const k = key();
    expect((await post('/v1/stream', {}, { 'idempotency-key': k })).body).toBe('ab');
    expect((await post('/v1/stream', {}, { 'idempotency-key': k })).json().error.code).toBe('idempotency_response_not_cached');
    expect(runs).toBe(1);
  });

  it('the scope is the account', async () => {
    const k = key();
    await post('/v1/billable', { prompt: 'fox' }, { 'idempotency-key': k, 'x-test-account': 'acct_a' });
    const other = await post('/v1/billable', { prompt: 'owl' }, { 'idempotency-key': k, 'x-test-account': 'acct_b' });
    expect(other.statusCode).toBe(200);
    expect(runs).toBe(2);
  });

  it('a route-set fingerprint (multipart) decides sameness, not the raw body', async () => {
    const k = key();
    await post('/v1/parts', { boundary: 'one', prompt: 'p', file: 'PNG' }, { 'idempotency-key': k });
    const same = await post('/v1/parts', { boundary: 'two', prompt: 'p', file: 'PNG' }, { 'idempotency-key': k });
    expect(same.headers['idempotency-replayed']).toBe('true');
    const otherFile = await post('/v1/parts', { boundary: 'three', prompt: 'p', file: 'GIF' }, { 'idempotency-key': k });
    expect(otherFile.json().error.code).toBe('idempotency_key_reuse');
    expect(runs).toBe(1);
  });

  it('a hijacked handler records its response with completeHijacked; a failure it reports frees the key', async () => {
    const k = key();
    const first = await post('/v1/hijacked', {}, { 'idempotency-key': k });
    const replay = await post('/v1/hijacked', {}, { 'idempotency-key': k });
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body).toBe('{"run":1}');
    expect(first.body).toBe(' {"run":1}'); // the keep-alive space went out live, and only the body was recorded
    const failing = key();
    expect((await post('/v1/hijacked', { fail: true }, { 'idempotency-key': failing })).statusCode).toBe(200);
    expect((await post('/v1/hijacked', { fail: true }, { 'idempotency-key': failing })).headers['idempotency-replayed']).toBeUndefined();
    expect(runs).toBe(3);
  });

  it('a hijacked handler that never records its response: the key is freed when the connection closes', async () => {
    const k = key();
    await post('/v1/hijacked-forgetful', {}, { 'idempotency-key': k });
    let retry = await post('/v1/hijacked-forgetful', {}, { 'idempotency-key': k });
    for (let i = 0; i < 50 && retry.statusCode === 409; i++) {
      await new Promise((r) => setTimeout(r, 10));
      retry = await post('/v1/hijacked-forgetful', {}, { 'idempotency-key': k });
    }
    expect(retry.statusCode).toBe(200);
    expect(runs).toBe(2);
  });

  it('a client that leaves before the answer: the key stays held while the call runs, and its 2xx is still recorded', async () => {
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const k = key();
      const url = new URL('/v1/billable', address);
      const gone = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': k } });
      gone.on('error', () => {});
      gone.end(JSON.stringify({ prompt: 'fox', wait: true }));
      while (gates.length === 0) await new Promise((r) => setTimeout(r, 5));
      gone.destroy();
      await new Promise((r) => setTimeout(r, 50));
      // The call still runs (and would still charge): a retry now must not run it a second time.
      expect((await post('/v1/billable', { prompt: 'fox', wait: true }, { 'idempotency-key': k })).json().error.code).toBe('idempotency_in_flight');
      gates.shift()!();
      let replay = await post('/v1/billable', { prompt: 'fox', wait: true }, { 'idempotency-key': k });
      for (let i = 0; i < 50 && replay.statusCode === 409; i++) {
        await new Promise((r) => setTimeout(r, 10));
        replay = await post('/v1/billable', { prompt: 'fox', wait: true }, { 'idempotency-key': k });
      }
      expect(replay.statusCode).toBe(200);
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(runs).toBe(1);
    } finally {
      await app.close().catch(() => {});
    }
  });
});
