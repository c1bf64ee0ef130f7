import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { walletStream } from '../../src/events/catalog/wallet';
import { createPostgresEventStore } from '../../src/events/store/postgres';
import { chatConfig } from '../chat/support';
import { canonicalState as canonical } from '../support/canonical-state';
import { startSimulatedGateway, startTestGateway, type SimulatedGateway, type TestGateway } from '../support/gateway';
import { appendCallHistory, SEEDED_CAPTURE } from '../support/long-history';
import { testDatabase, type TestDatabase } from '../support/storage';

// Issue 35, item 4: a wallet history without a snapshot (written before snapshots existed, by a
// restore, or past the command side as here) is folded and snapshotted in the background at start,
// so that its first call does not fold it; calls that come meanwhile are answered exactly.

const GRANT = 40_440_000_000n; // the sign-up grant
/** Seeded calls per account: 3,000 events, three times SNAPSHOT_EVERY. */
const CALLS = 1500;

let db: TestDatabase | null = null;
const open: Array<TestGateway | SimulatedGateway> = [];
afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
  await db?.drop();
  db = null;
});

/** Accounts with a key each, opened through the admin API, then given a long history past the command side. */
async function seededAccounts(count: number) {
  db = await testDatabase();
  const first = await startTestGateway({ db });
  const accounts = [];
  for (let i = 0; i < count; i++) accounts.push(await first.accountWithKey());
  await first.close();
  const store = createPostgresEventStore(db.sql);
  const seeded = [];
  for (const a of accounts) seeded.push({ ...a, head: await appendCallHistory(store, a.accountId, a.keyId, CALLS) });
  return seeded;
}

async function snapshotOf(accountId: string) {
  const [row] = await db!.sql.query<{ revision: string; version: string }>('SELECT revision::text AS revision, version FROM stream_snapshots WHERE stream_id = $1', [walletStream(accountId)]);
  return row ? { revision: BigInt(row.revision), version: row.version } : null;
}

async function eventually<T>(read: () => Promise<T | null>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error('not in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('snapshot backfill at start', () => {
  it('a start snapshots a long history that has no snapshot before it says ready, with no call for it', async () => {
    const [a] = await seededAccounts(1);
    expect(await snapshotOf(a!.accountId)).toBeNull();

    const t = await startTestGateway({ db: db! });
    open.push(t);
    // startTestGateway returns once the warm start has ended (/readyz ready): the backfill's time is part of it.
    const snapshot = await snapshotOf(a!.accountId);
    expect(snapshot?.revision).toBe(a!.head);
    expect(snapshot?.version).toMatch(/^wallet\./);
    // Loaded into the ledger's cache as well (however long ago: the machine may be slow).
    expect(t.gateway.ledger.wallets.fresh(walletStream(a!.accountId), 600_000)?.state.balance).toBe(GRANT - BigInt(CALLS) * SEEDED_CAPTURE);
    expect(t.logs.join('')).toMatch(/snapshot backfill: long streams without a snapshot loaded and snapshotted/);
  });

  it('without holding the start (WARM_START_KEYS=0) the backfill runs beside calls, which are billed exactly', async () => {
    const [quiet, busy] = await seededAccounts(2);
    const h = await startSimulatedGateway(chatConfig, { db: db!, env: { WARM_START_KEYS: '0' } });
    open.push(h);
    // At once, while the backfill may still be folding these streams.
    const openai = new OpenAI({ apiKey: busy!.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: `call ${i}` }] })),
    );
    for (const answer of answers) expect(answer.choices[0]?.message.content).toMatch(/^Echo: call \d$/);

    // The quiet account had no call: its snapshot is the backfill's.
    expect((await eventually(() => snapshotOf(quiet!.accountId))).revision).toBe(quiet!.head);
    expect((await eventually(() => snapshotOf(busy!.accountId))).revision).toBeGreaterThanOrEqual(busy!.head);

    // Money: the seeded captures and the four calls' costs, nothing more or less.
    const gateway = h.t.gateway;
    await gateway.ledger.idle();
    await gateway.runner.catchUpToHead();
    const [costs] = await db!.sql.query<{ n: string; cost: string }>('SELECT count(*)::text AS n, coalesce(sum(cost), 0)::text AS cost FROM call_log WHERE account_id = $1 AND channel_id <> $2', [busy!.accountId, 'seed']);
    expect(costs!.n).toBe('4');
    expect(BigInt(costs!.cost)).toBeGreaterThan(0n);
    const wallet = await gateway.ledger.wallet(busy!.accountId);
    expect(wallet.balance).toBe(GRANT - BigInt(CALLS) * SEEDED_CAPTURE - BigInt(costs!.cost));
    expect(wallet.held).toBe(0n);
    // The state the calls were decided on is the one the whole log gives.
    expect(canonical(wallet)).toEqual(canonical((await gateway.ledger.wallets.fromLog(walletStream(busy!.accountId))).state));
    expect(canonical(await gateway.ledger.wallet(quiet!.accountId))).toEqual(canonical((await gateway.ledger.wallets.fromLog(walletStream(quiet!.accountId))).state));
  });
});
