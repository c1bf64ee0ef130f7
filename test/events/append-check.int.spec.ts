import { createServer, type Server } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredHolds } from '../../src/jobs/hold-sweeper';
import { UnwritableEventError, decodeRecorded, walletStream, type CallRecord } from '../../src/events/catalog';
import { START } from '../../src/events/store/port';
import { parseUsd } from '../../src/money/usd';
import { verifyLedger } from '../../src/projections/verify';
import type { Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { testDatabase, type TestDatabase } from '../support/storage';

/** An upstream that answers every chat call with the usage block it is given (the issue's `1e20` as JSON text). */
function misbehavingUpstream(): Promise<{ url: string; usage: { text: string }; close(): Promise<void> }> {
  const usage = { text: '{"prompt_tokens": 1e20, "completion_tokens": 3, "total_tokens": 1e20}' };
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"chat-model-upstream",` +
          `"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":${usage.text}}`,
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        usage,
        close: () => new Promise((done) => server.close(() => done())),
      }),
    ),
  );
}

let db: TestDatabase;
let upstream: Awaited<ReturnType<typeof misbehavingUpstream>>;
let t: TestGateway;
const config = () => chatConfig({ url: upstream.url } as Simulator);
const restart = async () => {
  await t.close();
  t = await startTestGateway({ db, config: config() });
};

beforeAll(async () => {
  db = await testDatabase();
  upstream = await misbehavingUpstream();
  t = await startTestGateway({ db, config: config() });
});
afterAll(async () => {
  await t.close();
  await upstream.close();
  await db.drop();
});

const call = (fields: Partial<CallRecord> = {}): CallRecord => ({
  request_id: 'req-test',
  key_id: null,
  model: 'chat-model',
  endpoint: '/v1/chat/completions',
  status: 'success',
  error_code: null,
  error_message: null,
  input_tokens: 10,
  output_tokens: 3,
  cached_tokens: 0,
  unit_count: null,
  unit_type: null,
  latency_ms: 12,
  attempts_count: 1,
  channel_id: 'cc-a',
  task_id: null,
  submitted_at: 1_700_000_000,
  result_urls: [],
  result_expires_at: null,
  ...fields,
});

/** Every event of the log, decoded as a reader after a restart decodes it: throws on the first it cannot. */
async function decodeWholeLog() {
  const events = await t.gateway.storage.store.readAll({ after: START, maxCount: 100_000 });
  for (const event of events) decodeRecorded(event);
  return events;
}

async function openHold(accountId: string, holdId: string) {
  const reserved = await t.gateway.ledger.reserve(accountId, { holdId, amount: parseUsd('0.01'), keyId: null, purpose: 'chat', ttlSeconds: 60 });
  expect(reserved.ok).toBe(true);
}

describe('an event that could not be read back is refused at the append', () => {
  it('refuses a settlement whose call record the catalog cannot decode; the hold stays open for the sweeper, and the wallet reloads after a restart', async () => {
    const ledger = () => t.gateway.ledger;
    const opened = await ledger().openAccount('bad usage');
    if (!opened.ok) throw new Error(opened.error.message);
    const { accountId } = opened;
    const bad: Array<[string, Partial<CallRecord> | null, bigint]> = [
      ['input_tokens', { input_tokens: 1e20 }, 1n],
      ['output_tokens', { output_tokens: 1.5 }, 1n],
      ['cached_tokens', { cached_tokens: -3 }, 1n],
      ['latency_ms', { latency_ms: 2 ** 31 }, 1n],
      // An amount no read model's bigint column can hold.
      ['captured', null, 2n ** 64n],
    ];
    for (const [i, [field, fields, amount]] of bad.entries()) {
      await openHold(accountId, `h-bad-${i}`);
      const settled = ledger().settle(accountId, `h-bad-${i}`, amount, fields ? call(fields) : undefined);
      await expect(settled).rejects.toBeInstanceOf(UnwritableEventError);
      await expect(settled).rejects.toThrow(field);
    }
    const events = await t.gateway.storage.store.readStream(walletStream(accountId));
    expect(events.map((e) => e.type)).toEqual(['AccountOpened', 'CreditGranted', ...bad.map(() => 'FundsReserved')]);
    expect([...(await ledger().wallet(accountId)).holds.keys()]).toEqual(bad.map((_, i) => `h-bad-${i}`));

    await restart();
    const reloaded = await ledger().wallet(accountId);
    expect(reloaded.balance).toBe(parseUsd('40.44'));
    // The sweeper releases the holds once they expire: the calls are free, nothing is lost.
    await t.gateway.runner.catchUpToHead();
    expect(await sweepExpiredHolds(t.db.sql, ledger(), Math.floor(Date.now() / 1000) + 3600)).toBe(bad.length);
    const swept = await ledger().wallet(accountId);
    expect(swept.holds.size).toBe(0);
    expect(swept.held).toBe(0n);
    expect(swept.balance).toBe(parseUsd('40.44'));
    await t.gateway.runner.catchUpToHead();
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql, { accountId })).toEqual([]);
  });

  it('checks the data as the log gives it back: NaN is null there, U+0000 is U+FFFD', async () => {
    const opened = await t.gateway.ledger.openAccount('round trip');
    if (!opened.ok) throw new Error(opened.error.message);
    await openHold(opened.accountId, 'h-nan');
    // unit_count is nullable: JSON writes NaN as null, which reads back fine.
    const settled = await t.gateway.ledger.settle(opened.accountId, 'h-nan', 5n, call({ unit_count: NaN, model: 'bad\u0000model' }));
    expect(settled.ok).toBe(true);
    const [last] = await t.gateway.storage.store.readStream(walletStream(opened.accountId), { direction: 'backwards', maxCount: 1 });
    expect(last!.data).toMatchObject({ call: { unit_count: null, model: 'bad\ufffdmodel' } });
    // Not nullable: NaN is refused.
    await openHold(opened.accountId, 'h-nan-2');
    await expect(t.gateway.ledger.settle(opened.accountId, 'h-nan-2', 5n, call({ latency_ms: NaN }))).rejects.toBeInstanceOf(UnwritableEventError);
  });

  it('refuses only the bad command of a group-commit round; the others of the round are written', async () => {
    const ledger = t.gateway.ledger;
    const opened = await ledger.openAccount('group');
    if (!opened.ok) throw new Error(opened.error.message);
    const { accountId } = opened;
    for (const hold of ['g1', 'g2', 'g3']) await openHold(accountId, hold);
    // Deferrable settlements linger for company: the three share a round (one append) until it is refused.
    const results = await Promise.allSettled([
      ledger.settle(accountId, 'g1', 100n, call({ request_id: 'g1' }), true),
      ledger.settle(accountId, 'g2', 100n, call({ request_id: 'g2', input_tokens: 1e20 }), true),
      ledger.settle(accountId, 'g3', 100n, call({ request_id: 'g3' }), true),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const wallet = await ledger.wallet(accountId);
    expect([...wallet.holds.keys()]).toEqual(['g2']);
    expect(wallet.balance).toBe(parseUsd('40.44') - 200n);
  });

  it('the issue: an upstream answering prompt_tokens 1e20 leaves nothing in the log that a restart cannot read', async () => {
    const { accountId, key } = await t.accountWithKey();
    const openai = () => new OpenAI({ apiKey: key, baseURL: 'http://gateway.test/v1', maxRetries: 0, fetch: injectFetch(t) });
    const answer = await openai().chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hello' }] });
    expect(answer.choices[0]!.message.content).toBe('hi');
    await t.gateway.ledger.idle();
    await decodeWholeLog();

    await restart();
    // The account, everyone else and a brand-new account all work after the restart.
    const balance = await t.gateway.app.inject({ method: 'GET', url: '/v1/key/balance', headers: { authorization: `Bearer ${key}` } });
    expect(balance.statusCode).toBe(200);
    upstream.usage.text = '{"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}';
    const next = await openai().chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'again' }] });
    expect(next.choices[0]!.message.content).toBe('hi');
    expect((await t.admin('POST', '/accounts', { name: 'after the restart' })).statusCode).toBe(201);
    await t.gateway.ledger.idle();
    await t.gateway.runner.catchUpToHead();
    // Money is conserved and the projections agree with the log, whatever was charged for the first call.
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql, { accountId })).toEqual([]);
  });
});

/** The openai SDK's requests answered by the gateway's app in process (no port). */
function injectFetch(gateway: TestGateway): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const response = await gateway.gateway.app.inject({
      method: (init?.method ?? 'GET') as 'GET',
      url: url.pathname + url.search,
      headers,
      ...(init?.body !== undefined && init.body !== null ? { payload: init.body as string } : {}),
    });
    return new Response(response.rawPayload, { status: response.statusCode, headers: response.headers as Record<string, string> });
  }) as typeof fetch;
}
