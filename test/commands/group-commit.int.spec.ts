import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/commands/ledger';
import { evolve, initialWalletState, type WalletState } from '../../src/commands/wallet/state';
import { decodeRecorded, walletStream, type WalletEvent } from '../../src/events/catalog';
import type { AppendOptions, EventStore } from '../../src/events/store/port';
import { ledgerTestbed, storeWith, type LedgerTestbed, openAccount } from '../support/ledger';

/** The event store with every append counted: how many round trips the commands took. */
function counted(store: EventStore) {
  const appends: { events: number; durable: boolean }[] = [];
  const wrapped = storeWith(store, {
    append(streamId, events, expected, options?: AppendOptions) {
      appends.push({ events: events.length, durable: options?.durable !== false });
      return store.append(streamId, events, expected, options);
    },
  });
  return { store: wrapped, appends };
}

let t: LedgerTestbed;
beforeAll(async () => {
  t = await ledgerTestbed();
});
afterAll(() => t.db.drop());

/** The wallet folded from its whole stream, with nothing cached. */
async function replayed(accountId: string): Promise<{ state: WalletState; events: WalletEvent[] }> {
  const recorded = await t.store.readStream(walletStream(accountId));
  recorded.forEach((r, i) => expect(r.revision).toBe(BigInt(i)));
  const events = recorded.map((r) => decodeRecorded(r) as WalletEvent);
  return { state: events.reduce(evolve, initialWalletState), events };
}

// Event ids derive from the hold id (`reserve:<hold>`) and are unique in the whole log, as
// request ids are: hold ids here are made unique per account.
const hold = (accountId: string, name: string) => `${accountId}/${name}`;
const reserve = (ledger: Ledger, accountId: string, name: string, amount: bigint) =>
  ledger.reserve(accountId, { holdId: hold(accountId, name), amount, keyId: 'key_a', spendCap: null, purpose: 'test', ttlSeconds: 60 });

describe('group commit of a wallet’s commands', () => {
  it('decides concurrent commands in order and appends them together', async () => {
    const { store: countingStore, appends } = counted(t.store);
    const ledger = t.ledger({ store: countingStore });
    const accountId = await openAccount(ledger, 'batch');
    appends.length = 0;

    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => reserve(ledger, accountId, `h${i}`, 1_000n)));
    expect(results.every((r) => r.ok)).toBe(true);
    // The first goes alone; the rest queue behind it and share appends.
    expect(appends.length).toBeGreaterThanOrEqual(2);
    expect(appends.length).toBeLessThan(40);
    expect(appends.reduce((n, a) => n + a.events, 0)).toBe(40);
    // Each caller sees the state right after its own decision, in arrival order.
    results.forEach((r, i) => r.ok && expect(r.state.held).toBe(BigInt(i + 1) * 1_000n));

    const { state } = await replayed(accountId);
    expect(state.held).toBe(40_000n);
    expect(state.holds.size).toBe(40);
  });

  it('queues a deferrable settlement at once and appends it without a waiting caller', async () => {
    const ledger = t.ledger();
    const accountId = await openAccount(ledger, 'deferred');
    expect((await reserve(ledger, accountId, 'h1', 5_000n)).ok).toBe(true);

    const settled = ledger.settle(accountId, hold(accountId, 'h1'), 1_234n, undefined, true);
    // A read queued after it sees it, though nobody awaited the settlement.
    expect((await ledger.wallet(accountId)).captured).toBe(1_234n);
    await ledger.idle();
    expect((await replayed(accountId)).state.captured).toBe(1_234n);
    expect((await settled).ok).toBe(true);
  });

  it('meters calls without waiting for the WAL flush unless configured to, and money in always waits', async () => {
    for (const callCommit of ['async', 'sync'] as const) {
      const { store: countingStore, appends } = counted(t.store);
      const ledger = t.ledger({ store: countingStore, callCommit });
      const accountId = await openAccount(ledger, `commit ${callCommit}`);
      await ledger.topUp(accountId, 200_000_000_000n, 'wire');
      await reserve(ledger, accountId, 'h1', 10n);
      await ledger.settle(accountId, hold(accountId, 'h1'), 5n);
      expect(appends.map((a) => a.durable)).toEqual([true, true, callCommit === 'sync', callCommit === 'sync']);
    }
  });

  it('waits for the flush by default where the database lives in the process (PGlite), not on a Postgres server', async () => {
    // Embedded, an unflushed commit dies with the gateway (test/storage/crash-durability.int.spec.ts).
    const durable = t.store.engine === 'pglite';
    const { store: countingStore, appends } = counted(t.store);
    const ledger = t.ledger({ store: countingStore });
    const accountId = await openAccount(ledger, 'commit default');
    appends.length = 0;
    await reserve(ledger, accountId, 'h1', 10n);
    await ledger.settle(accountId, hold(accountId, 'h1'), 5n);
    expect(appends.map((a) => a.durable)).toEqual([durable, durable]);
  });

  it('two instances never hold more than the wallet has: 200 concurrent reservations, room for 50', async () => {
    const a = t.ledger();
    const b = t.ledger({ sql: t.db.another() });
    const accountId = await openAccount(a, 'race');
    const signup = (await a.wallet(accountId)).balance;
    const unit = signup / 50n;
    // Both instances have the wallet cached before the race.
    await b.wallet(accountId);

    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => reserve(i % 2 === 0 ? a : b, accountId, `r${i}`, unit)));
    const accepted = results.filter((r) => r.ok).length;
    expect(accepted).toBe(50);
    for (const r of results) if (!r.ok) expect(r.error.code).toBe('insufficient_funds');
    const { state, events } = await replayed(accountId);
    expect(events.filter((e) => e.type === 'FundsReserved')).toHaveLength(50);
    expect(state.held).toBe(50n * unit);
    expect(state.balance - state.held).toBeGreaterThanOrEqual(0n);
  });

  it('refuses only on a fresh state: a top-up by another instance is seen before a refusal', async () => {
    const a = t.ledger();
    const b = t.ledger({ sql: t.db.another() });
    const accountId = await openAccount(a, 'stale');
    const before = (await a.wallet(accountId)).balance;
    await b.topUp(accountId, 200_000_000_000n, 'wire');
    // a's cache still has the sign-up balance only; both reservations need the top-up.
    const [first, second] = await Promise.all([reserve(a, accountId, 's1', before + 1n), reserve(a, accountId, 's2', before + 1n)]);
    expect(first.ok && second.ok).toBe(true);
  });

  it('keeps money conserved and every answer true to the log, for random concurrent commands from two instances', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('reserve' as const), hold: fc.nat(15), amount: fc.integer({ min: 0, max: 20_000_000_000 }) }),
      fc.record({ kind: fc.constant('settle' as const), hold: fc.nat(15), amount: fc.integer({ min: 0, max: 30_000_000_000 }) }),
      fc.record({ kind: fc.constant('release' as const), hold: fc.nat(15) }),
      fc.record({ kind: fc.constant('topup' as const) }),
    );
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(op, fc.boolean()), { minLength: 1, maxLength: 40 }), async (ops) => {
        round += 1;
        const a = t.ledger();
        const b = t.ledger({ sql: t.db.another() });
        const id = await openAccount(a, `prop ${round}`);
        const results = await Promise.all(
          ops.map(([o, onA]) => {
            const l = onA ? a : b;
            const name = `p${o.kind === 'topup' ? 0 : o.hold}`;
            if (o.kind === 'reserve') return reserve(l, id, name, BigInt(o.amount));
            if (o.kind === 'settle') return l.settle(id, hold(id, name), BigInt(o.amount), undefined, true);
            if (o.kind === 'release') return l.release(id, hold(id, name), 'test');
            return l.topUp(id, 134_800_000_000n, 'wire');
          }),
        );
        await Promise.all([a.idle(), b.idle()]);
        const { state, events } = await replayed(id);
        // Conservation, and no hold over the balance at the moment it was taken.
        expect(state.credited).toBe(state.balance + state.captured);
        expect(state.held).toBe([...state.holds.values()].reduce((s, h) => s + h.amount, 0n));
        // Every accepted reservation is in the log exactly once, every refused one is not.
        const reservedIds = events.filter((e) => e.type === 'FundsReserved').map((e) => e.data.hold_id);
        expect(new Set(reservedIds).size).toBe(reservedIds.length);
        // The same command twice (same hold, same kind) is a retry: answered ok, appended once.
        const accepted = (kinds: string[]) =>
          new Set(ops.filter(([o], i) => kinds.includes(o.kind) && results[i]!.ok).map(([o]) => `${o.kind}:${(o as { hold: number }).hold}`));
        expect([...accepted(['reserve'])].map((k) => hold(id, `p${k.split(':')[1]}`)).sort()).toEqual([...reservedIds].sort());
        const closings = events.filter((e) => e.type === 'HoldSettled' || e.type === 'HoldReleased');
        expect(closings).toHaveLength(accepted(['settle', 'release']).size);
        let replay = initialWalletState;
        for (const e of events) {
          if (e.type === 'FundsReserved') expect(e.data.amount).toBeLessThanOrEqual(replay.balance - replay.held);
          replay = evolve(replay, e);
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 10_000) >= 10_000 ? 25 : 5 },
    );
  });
});
