import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredHolds } from '../../src/jobs/hold-sweeper';
import { walletStream } from '../../src/events/catalog';
import { parseUsd } from '../../src/money/usd';
import { verifyLedger } from '../../src/projections/verify';
import { startSimulator, type Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { testDatabase, type TestDatabase } from '../support/storage';

let db: TestDatabase;
let sim: Simulator;
let t: TestGateway;
let baseUrl: string;

async function start() {
  t = await startTestGateway({ db, config: chatConfig(sim) });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
}

beforeAll(async () => {
  db = await testDatabase();
  sim = await startSimulator();
  await start();
});
afterAll(async () => {
  await t.close();
  await sim.close();
  await db.drop();
});

/** Appends an event straight into the events table, past every check: what an older version or a bug left there. */
async function plant(accountId: string, type: string, data: string) {
  const stream = walletStream(accountId);
  await db.sql.query(
    `INSERT INTO events (stream_id, stream_revision, event_id, type, data, transaction_id)
     SELECT $1, max(stream_revision) + 1, $2::uuid, $3, $4::jsonb, pg_current_xact_id() FROM events WHERE stream_id = $1`,
    [stream, randomUUID(), type, data],
  );
}

const chat = (key: string) => new OpenAI({ apiKey: key, baseURL: `${baseUrl}/v1`, maxRetries: 0 });
const balanceOf = (key: string) => fetch(`${baseUrl}/v1/key/balance`, { headers: { authorization: `Bearer ${key}` } });

describe('an event in the log that cannot be decoded', () => {
  it('the issue: after a restart only its account answers 503; other accounts, new accounts, metrics and verify work', async () => {
    const bad = await t.accountWithKey();
    const legacy = await t.accountWithKey();
    const good = await t.accountWithKey();
    await chat(bad.key).chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'before' }] });
    for (const [who, hold] of [[bad, 'h-bad'], [good, 'h-good']] as const) {
      const reserved = await t.gateway.ledger.reserve(who.accountId, { holdId: hold, amount: parseUsd('0.10'), keyId: who.keyId, purpose: 'chat', ttlSeconds: 60 });
      expect(reserved.ok).toBe(true);
    }
    await t.gateway.runner.catchUpToHead();
    const requestsBefore = sim.requests.length;
    // Planted while no gateway runs, so the restarted one parks (and logs) all of them.
    await t.close();
    // The settlement of the issue (usage.prompt_tokens 1e20 in its call record), and an event of a type no one knows.
    const call = {
      request_id: 'req_bad', key_id: bad.keyId, model: 'chat-model', endpoint: '/v1/chat/completions', status: 'success',
      error_code: null, error_message: null, input_tokens: 1e20, output_tokens: 3, cached_tokens: 0, unit_count: null, unit_type: null,
      latency_ms: 20, attempts_count: 1, channel_id: 'cc-a', task_id: null, submitted_at: 1_700_000_000, result_urls: [], result_expires_at: null,
    };
    await plant(bad.accountId, 'HoldSettled', `{"hold_id":"h-bad","hold_amount":"100000000","captured":"5","released":"99999995","at":1700000001,"call":${JSON.stringify(call).replace('100000000000000000000', '1e20')}}`);
    await plant(legacy.accountId, 'WalletMigrated', '{"from":"v0"}');
    await start();
    await t.gateway.runner.catchUpToHead();

    // Everyone else: a chat call, the balance, a brand-new account and its first call.
    const answer = await chat(good.key).chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'after' }] });
    expect(answer.choices[0]!.message.content).toBe('Echo: after');
    const goodBalance = await balanceOf(good.key);
    expect(goodBalance.status).toBe(200);
    expect(Number(((await goodBalance.json()) as { used_usd: string }).used_usd)).toBeGreaterThan(0);
    const fresh = await t.accountWithKey();
    expect((await chat(fresh.key).chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'new' }] })).choices).toHaveLength(1);
    expect((await t.admin('GET', `/accounts/${good.accountId}`)).statusCode).toBe(200);

    // The account whose stream holds the event: a clear 503 in each endpoint's error shape, and no upstream call.
    const requestsNow = sim.requests.length;
    const balance = await balanceOf(bad.key);
    expect(balance.status).toBe(503);
    const body = (await balance.json()) as { error: { type: string; code: string; message: string } };
    expect(body.error).toMatchObject({ type: 'server_error', code: 'account_unavailable' });
    expect(body.error.message).toContain('cannot be read');
    const refused = await chat(bad.key).chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect(refused).toMatchObject({ status: 503, code: 'account_unavailable' });
    const anthropic = new Anthropic({ apiKey: legacy.key, baseURL: baseUrl, maxRetries: 0 });
    const messages = await anthropic.messages.create({ model: 'msg-model', max_tokens: 20, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(messages).toBeInstanceOf(Anthropic.APIError);
    expect(messages).toMatchObject({ status: 503, error: { type: 'error', error: { type: 'api_error' } } });
    expect(sim.requests.length).toBe(requestsNow);
    expect(requestsNow).toBe(requestsBefore + 2);
    expect(t.logs.some((line) => line.includes('a stream of the log cannot be read') && line.includes(walletStream(bad.accountId)))).toBe(true);

    // The admin API: 503 for that account, the list shows it unavailable.
    const shown = await t.admin('GET', `/accounts/${bad.accountId}`);
    expect(shown.statusCode).toBe(503);
    expect(shown.json()).toMatchObject({ error: { code: 'account_unavailable' } });
    const list = (await t.admin('GET', '/accounts?limit=1000')).json() as { data: Array<{ id: string; status: string }> };
    const statusOf = new Map(list.data.map((a) => [a.id, a.status]));
    expect([statusOf.get(bad.accountId), statusOf.get(legacy.accountId), statusOf.get(good.accountId)]).toEqual(['unavailable', 'unavailable', 'active']);

    // Parked in every projection that follows wallets (the task views do too: a task's money), with the
    // reason; counted in /metrics.
    const WALLET_FOLLOWERS = ['accounts', 'audit', 'call-log', 'ledger', 'tasks'];
    const parked = await t.gateway.runner.parkedEvents();
    expect(parked.map((p) => `${p.projection} ${p.streamId} ${p.type}`).sort()).toEqual(
      WALLET_FOLLOWERS.flatMap((name) => [`${name} ${walletStream(bad.accountId)} HoldSettled`, `${name} ${walletStream(legacy.accountId)} WalletMigrated`]).sort(),
    );
    expect(parked.find((p) => p.type === 'HoldSettled')!.error).toContain('call.input_tokens');
    const metrics = await fetch(`${baseUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    const text = await metrics.text();
    expect(text).toContain('gateway_projection_parked_events{projection="accounts"} 2');
    expect(text).toContain('gateway_projection_parked_events{projection="keys"} 0');
    expect(t.logs.filter((line) => line.includes('projection parked an event')).length).toBe(2 * WALLET_FOLLOWERS.length);

    // The sweeper releases the other account's expired hold and keeps the unreadable one's.
    expect(await sweepExpiredHolds(t.db.sql, t.gateway.ledger, Math.floor(Date.now() / 1000) + 3600)).toBe(1);
    expect((await t.gateway.ledger.wallet(good.accountId)).holds.size).toBe(0);

    // verify: the two parked streams and nothing else.
    await t.gateway.runner.catchUpToHead();
    const differences = await verifyLedger(t.gateway.storage.store, t.db.sql);
    expect(differences.map((d) => `${d.subject} ${d.field}`).sort()).toEqual(
      WALLET_FOLLOWERS.flatMap((name) => [`stream ${walletStream(bad.accountId)} parked by ${name}`, `stream ${walletStream(legacy.accountId)} parked by ${name}`]).sort(),
    );
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql, { accountId: good.accountId })).toEqual([]);
  });

  it('a rate limit beyond 32 bits is refused with 400: the accounts table could not hold it, and the projection would stop', async () => {
    const { accountId } = await t.accountWithKey();
    const limits = await t.admin('PUT', `/accounts/${accountId}/limits`, { rpm: 2 ** 31, concurrency: null });
    expect(limits.statusCode).toBe(400);
    expect(limits.json()).toMatchObject({ error: { code: 'invalid_request' } });
    expect(limits.json().error.message).toContain('2147483647');
    expect((await t.admin('PUT', `/accounts/${accountId}/limits`, { rpm: 2 ** 31 - 1, concurrency: null })).statusCode).toBe(200);
    expect((await t.admin('POST', '/accounts', { name: 'next' })).statusCode).toBe(201);
  });
});
