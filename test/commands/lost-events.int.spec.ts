import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredHolds } from '../../src/jobs/hold-sweeper';
import type { Ledger } from '../../src/commands/ledger';
import { walletDecider } from '../../src/commands/wallet/decider';
import { type WalletState } from '../../src/commands/wallet/state';
import { decodeRecorded, walletStream, type WalletEvent } from '../../src/events/catalog';
import { parseUsd } from '../../src/money/usd';
import { allProjections } from '../../src/projections';
import { ProjectionRunner } from '../../src/projections/runner/runner';
import { ledgerTestbed, type LedgerTestbed } from '../support/ledger';

// A database crash loses the commits that did not wait for the WAL flush (LEDGER_CALL_COMMIT=async):
// the log then ends earlier than what a gateway saw, and other writers append at the lost revisions.
// Here the loss is made by deleting the newest events of a stream, which leaves the table as such a
// crash does (a real crash is in test/storage/outage.int.spec.ts). Whatever a gateway answers or
// decides afterwards must follow the log, never its cache of what was lost.

let t: LedgerTestbed;
beforeAll(async () => {
  t = await ledgerTestbed();
});
afterAll(() => t.db.drop());

let accounts = 0;
const view = (s: WalletState) => ({ balance: s.balance, held: s.held, holds: [...s.holds.keys()].sort(), credited: s.credited, captured: s.captured });

/** What the log says: the stream's events folded. */
const logView = async (accountId: string) =>
  view((await t.store.readStream(walletStream(accountId))).reduce((state, e) => walletDecider.evolve(state, decodeRecorded(e) as WalletEvent), walletDecider.initialState));

/** Deletes the stream's events after `revision`, as a crash that lost them would leave it. */
async function loseAfter(accountId: string, revision: bigint) {
  await t.db.sql.query('DELETE FROM events WHERE stream_id = $1 AND stream_revision > $2::bigint', [walletStream(accountId), String(revision)]);
}

async function revisionOf(ledger: Ledger, accountId: string) {
  return (await ledger.wallets.load(walletStream(accountId))).revision;
}

/** An account with a settled call: open, grant, reserve a hold, settle it (the settlement is the newest event). */
async function accountWithSettledCall(ledger: Ledger) {
  const opened = await ledger.openAccount(`lost-${accounts}`);
  if (!opened.ok) throw new Error('open');
  const { accountId } = opened;
  // Hold ids are unique across accounts: the reservation's event id derives from it.
  const holdId = `h-${accounts++}`;
  expect((await ledger.reserve(accountId, { holdId, amount: parseUsd('2'), keyId: null, purpose: 'chat', ttlSeconds: 600 })).ok).toBe(true);
  const beforeSettle = await revisionOf(ledger, accountId);
  expect((await ledger.settle(accountId, holdId, parseUsd('1.5'))).ok).toBe(true);
  return { accountId, holdId, beforeSettle };
}

describe('a wallet whose newest events the database lost', () => {
  it('reads as the log, not as the cache (balance, open holds)', async () => {
    const a = t.ledger();
    const { accountId, holdId, beforeSettle } = await accountWithSettledCall(a);
    expect(view(await a.wallet(accountId)).holds).toEqual([]);
    await loseAfter(accountId, beforeSettle);

    const wallet = view(await a.wallet(accountId));
    expect(wallet.holds).toEqual([holdId]);
    expect(wallet).toEqual(await logView(accountId));
  });

  it('is not read forward past the events another instance appended at the lost revisions', async () => {
    const a = t.ledger();
    const b = t.ledger({ sql: t.db.another() });
    const { accountId, beforeSettle } = await accountWithSettledCall(a);
    await loseAfter(accountId, beforeSettle);
    // The other instance appends at the lost revision, and then one more.
    expect((await b.topUp(accountId, parseUsd('200'), 'b-1')).ok).toBe(true);
    expect(view(await a.wallet(accountId))).toEqual(await logView(accountId));
    expect((await b.topUp(accountId, parseUsd('300'), 'b-2')).ok).toBe(true);
    expect(view(await a.wallet(accountId))).toEqual(await logView(accountId));
  });

  it('refuses an append decided on the lost events, instead of writing it after events the cache never saw', async () => {
    const a = t.ledger();
    const b = t.ledger({ sql: t.db.another() });
    const { accountId, holdId, beforeSettle } = await accountWithSettledCall(a);
    await loseAfter(accountId, beforeSettle);
    // b's top-up takes the settlement's revision: the stream is as long as a's cache says.
    expect((await b.topUp(accountId, parseUsd('200'), 'b-1')).ok).toBe(true);
    // a decides on its cache; the append must find the stream is not the one the cache was folded from.
    expect((await a.topUp(accountId, parseUsd('150'), 'a-1')).ok).toBe(true);
    const log = await logView(accountId);
    expect(log.holds).toEqual([holdId]);
    expect(log.credited).toBe(parseUsd('40.44') + parseUsd('200') + parseUsd('150'));
    expect(view(await a.wallet(accountId))).toEqual(log);
    expect(view(await b.wallet(accountId))).toEqual(log);
  });

  it('gets its hold, open in the log and past its deadline, released by the sweeper', async () => {
    let clock = 1_700_000_000;
    const a = t.ledger({ now: () => clock });
    const opened = await a.openAccount('sweep');
    if (!opened.ok) throw new Error('open');
    const { accountId } = opened;
    expect((await a.reserve(accountId, { holdId: 'h-swept', amount: parseUsd('2'), keyId: null, purpose: 'chat', ttlSeconds: 10 })).ok).toBe(true);
    // The projection saw the hold open; the settlement and its projection batch are lost together.
    const runner = new ProjectionRunner(t.db.sql, t.store, allProjections, { busy: () => false });
    await runner.migrate();
    await runner.catchUp();
    const open = await revisionOf(a, accountId);
    expect((await a.settle(accountId, 'h-swept', parseUsd('1'))).ok).toBe(true);
    await loseAfter(accountId, open);

    clock += 11;
    expect(await sweepExpiredHolds(t.db.sql, a, clock)).toBe(1);
    const log = await logView(accountId);
    expect(log.holds).toEqual([]);
    expect(log.balance).toBe((await a.wallet(accountId)).balance);
  });
});
