import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresEventStore } from '../../src/events/store/postgres';
import { ChildGateway } from '../support/child-gateway';
import { appendCallHistory } from '../support/long-history';

// Issue 35, item 4: a gateway told SIGTERM while its in-process projections are far behind the log
// exits within SHUTDOWN_GRACE_S: the projections stop between batches (each batch's checkpoint is
// committed with its rows) instead of catching up first, and the next run goes on from there with
// nothing lost. The lag is made as a restore or an import makes it: events written past the
// projections (and past the command side: the wallet also has no snapshot, which the start's
// backfill begins to fold and must give up as well).

const GRACE_S = 2;
/** 60,000 events: several seconds of catch-up on either storage, far more than the grace. */
const CALLS = 30_000;

let gw: ChildGateway;
let accountId: string;
let head: bigint;

beforeAll(async () => {
  gw = await ChildGateway.prepare({ env: { SHUTDOWN_GRACE_S: String(GRACE_S) } });
  await gw.start();
  ({ accountId } = await gw.accountWithKey('Lagging'));
  expect((await gw.terminate()).code).toBe(0);
  const sql = await gw.openDatabase();
  try {
    const [key] = await sql.query<{ key_id: string }>('SELECT key_id FROM api_keys WHERE account_id = $1', [accountId]);
    head = await appendCallHistory(createPostgresEventStore(sql), accountId, key!.key_id, CALLS, 2000);
  } finally {
    await sql.close();
  }
}, 300_000);
afterAll(() => gw.cleanup());

/** The lowest checkpoint and the log's head position (commit part). */
async function progress() {
  const sql = await gw.openDatabase();
  try {
    const [checkpoint] = await sql.query<{ c: string }>('SELECT min(commit_position)::text AS c FROM projection_checkpoints');
    const [log] = await sql.query<{ c: string }>('SELECT max(transaction_id::text::bigint)::text AS c FROM events');
    return { checkpoint: BigInt(checkpoint!.c), head: BigInt(log!.c) };
  } finally {
    await sql.close();
  }
}

describe('SIGTERM while the projections are far behind the log', () => {
  it('exits within the grace, the projections stopped part way; the next run catches up and the ledger verifies', async () => {
    const before = await progress();
    expect(before.checkpoint).toBeLessThan(before.head);

    await gw.start();
    // Right away: the runner has tens of thousands of events to apply.
    const sent = performance.now();
    const exit = await gw.terminate('SIGTERM');
    const tookMs = performance.now() - sent;
    expect(exit.code, gw.output).toBe(0);
    // The grace, and what a shutdown does besides (the batch or page in hand, closing storage, the log) on a
    // busy machine. (Before, the shutdown caught up with the whole log first: 5.4 s here on an idle Postgres.)
    expect(tookMs).toBeLessThan(GRACE_S * 1000 + 2500);

    // Stopped, not finished: still behind the log, from a durable checkpoint.
    const after = await progress();
    expect(after.checkpoint).toBeLessThan(after.head);

    // Nothing lost: the next run applies the rest, and the read models match the events.
    const verified = await gw.run(['ledger', 'verify']);
    expect(verified.code, verified.stderr + verified.stdout).toBe(0);
    expect(verified.stdout).toMatch(/ledger verified: projections match the events/);
    const sql = await gw.openDatabase();
    try {
      const [entries] = await sql.query<{ n: string }>('SELECT count(*)::text AS n FROM call_log WHERE account_id = $1', [accountId]);
      expect(BigInt(entries!.n)).toBe(BigInt(CALLS));
    } finally {
      await sql.close();
    }
    expect(head).toBeGreaterThan(BigInt(CALLS * 2 - 1));
  }, 300_000);
});
