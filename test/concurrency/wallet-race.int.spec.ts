import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { verifyLedger } from '../../src/projections/verify';
import type { Simulator } from '../../src/simulator';
import { imagesConfig, IMAGE_PRICE } from '../media/support';
import { startCluster, type Cluster } from './instances';

/** 100 output tokens at $8,000 per 1M cost exactly $0.80, and the simulator is told to answer
 * exactly 100 tokens: a call's settlement equals its hold, so the 40.44 sign-up grant pays
 * for exactly 50 calls however the reservations and settlements interleave. */
const config = (sim: Simulator) => {
  const base = imagesConfig(sim);
  return {
    ...base,
    models: [
      ...base.models,
      { id: 'pricey', owned_by: 'test', kind: 'text' as const, aliases: [], callable: true, endpoint_type: null, capabilities: [], price: { input: '0', output: '8000' } },
    ],
    channels: [...base.channels, { ...base.channels.find((c) => c.id === 'cc')!, id: 'cc-pricey', models: ['pricey'] }],
  };
};

let c: Cluster;
// Many sockets at once: the default agent would queue them per origin.
const agent = new Agent({ connections: 1000 });
beforeAll(async () => {
  c = await startCluster(config, { imageTimings: { hopMs: 10_000, ladderMs: 15_000 } });
});
afterAll(async () => {
  await c.close();
  await agent.close();
});

async function settle() {
  for (const t of c.instances) await t.gateway.ledger.idle();
  for (const t of c.instances) await t.gateway.runner.catchUpToHead();
}

const post = (i: number, path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${c.urls[i % c.urls.length]}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    // @ts-expect-error undici's dispatcher option of Node's fetch
    dispatcher: agent,
  });

describe(`concurrency across ${process.env.DATABASE_URL ? 'two instances on Postgres' : 'one embedded instance'}`, () => {
  it('500 concurrent chat calls on a wallet that affords 50: exactly 50 succeed, no hold stays open, the ledger verifies', async () => {
    const t = c.instances[0]!;
    const { accountId, key } = await t.accountWithKey();
    const body = { model: 'pricey', max_tokens: 100, messages: [{ role: 'user', content: '[[sim:reply_tokens:100]] go' }] };
    const responses = await Promise.all(Array.from({ length: 500 }, (_, i) => post(i, '/v1/chat/completions', key, body)));
    const statuses = responses.map((r) => r.status);
    const bodies = await Promise.all(responses.map((r) => r.json() as Promise<{ error?: { code: string } }>));
    expect(statuses.filter((s) => s === 200)).toHaveLength(50);
    expect(statuses.filter((s) => s === 402)).toHaveLength(450);
    expect(bodies.filter((b) => b.error).every((b) => b.error!.code === 'quota_exceeded')).toBe(true);

    await settle();
    for (const instance of c.instances) {
      const wallet = await instance.gateway.ledger.wallet(accountId);
      expect(wallet.held).toBe(0n);
      expect(wallet.holds.size).toBe(0);
      expect(wallet.balance).toBe(parseUsd('40.44') - 50n * parseUsd('0.80'));
    }
    expect(await verifyLedger(t.gateway.storage.store, t.gateway.storage.sql, { accountId })).toEqual([]);
    const usage = (await fetch(`${c.urls[0]}/api/v1/usage`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json())) as { total_requests: number };
    expect(usage.total_requests).toBe(500);
  });

  it('20 concurrent image requests with one Idempotency-Key: one upstream call, one charge, the rest replay or wait', async () => {
    const t = c.instances[0]!;
    const { accountId, key } = await t.accountWithKey();
    c.sim.reset();
    // The first call stays in flight long enough for the others to find it there.
    c.sim.enqueue('slow_first_byte:400');
    const body = { model: 'img-model', prompt: 'once only', n: 2 };
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i, '/v1/images/generations', key, body, { 'idempotency-key': 'same-intent-1' })));
    const texts = await Promise.all(responses.map((r) => r.text()));
    const ok = responses.flatMap((r, i) => (r.status === 200 ? [{ replayed: r.headers.get('idempotency-replayed'), text: texts[i]! }] : []));
    const conflicts = responses.flatMap((r, i) => (r.status === 409 ? [JSON.parse(texts[i]!) as { error: { code: string } }] : []));
    expect(ok.length + conflicts.length).toBe(20);
    expect(ok.filter((o) => o.replayed !== 'true')).toHaveLength(1);
    expect(conflicts.every((e) => e.error.code === 'idempotency_in_flight')).toBe(true);
    // Replays are the first answer byte for byte.
    for (const o of ok) expect(o.text).toBe(ok.find((x) => x.replayed !== 'true')!.text);
    expect(c.sim.requests.filter((r) => r.path.endsWith('/v1/images/generations'))).toHaveLength(1);

    const again = await post(1, '/v1/images/generations', key, body, { 'idempotency-key': 'same-intent-1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await again.text()).toBe(ok.find((x) => x.replayed !== 'true')!.text);

    await settle();
    const wallet = await t.gateway.ledger.wallet(accountId);
    expect(wallet.balance).toBe(parseUsd('40.44') - 2n * parseUsd(IMAGE_PRICE));
    expect(wallet.held).toBe(0n);
    expect(c.sim.requests).toHaveLength(1);
  });
});
