import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger, ReserveRequest } from '../../src/commands/ledger';
import type { EventStore } from '../../src/events/store/port';
import { parseUsd } from '../../src/money/usd';
import { ledgerTestbed, storeWith, type LedgerTestbed } from '../support/ledger';

// A reservation's early word (Ledger.reserveEarly / HandleOptions.onDecided): decided on this
// process's state as the append leaves, or behind an append in flight, and never in place of
// the commit, which stays the final word.

/** The event store with appends held at a gate until the test opens it. */
function gated(store: EventStore) {
  let open: () => void = () => {};
  let gate: Promise<void> = Promise.resolve();
  let appends = 0;
  const wrapped = storeWith(store, {
    async append(...args) {
      appends++;
      await gate;
      return store.append(...args);
    },
  });
  return {
    store: wrapped,
    close() {
      let resolve!: () => void;
      const closed = new Promise<void>((r) => (resolve = r));
      const previous = open;
      // Closing twice keeps one gate: whoever waits at it is let through by the next open().
      open = () => {
        previous();
        resolve();
      };
      gate = closed;
    },
    open() {
      open();
      open = () => {};
      gate = Promise.resolve();
    },
    appends: () => appends,
  };
}

let t: LedgerTestbed;
let store: EventStore;
const ledgerOn = (s: EventStore) => t.ledger({ store: s });

beforeAll(async () => {
  t = await ledgerTestbed();
  store = t.store;
});
afterAll(() => t.db.drop());

/** An account with the sign-up grant (40.44 USD), its wallet cached by `ledger`. */
async function account(ledger: Ledger): Promise<string> {
  const opened = await ledger.openAccount('early');
  if (!opened.ok) throw new Error(opened.error.message);
  return opened.accountId;
}

const request = (accountId: string, name: string, usd: string, keyId: string | null = null): ReserveRequest => ({
  holdId: `${accountId}/${name}`,
  amount: parseUsd(usd),
  keyId,
  spendCap: null,
  purpose: 'test',
  ttlSeconds: 60,
});

/** Whether a promise has settled after every pending callback ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

/** A ledger over a gated store, an account opened through it, and the gate closed. */
async function behindAGate() {
  const g = gated(store);
  const ledger = ledgerOn(g.store);
  const accountId = await account(ledger);
  g.close();
  return { g, ledger, accountId };
}

describe('early word of a reservation', () => {
  it('is given as the append leaves, and the commit confirms it', async () => {
    const { g, ledger, accountId } = await behindAGate();
    const hold = ledger.reserveEarly(accountId, request(accountId, 'a', '1'));
    const decided = await hold.decided;
    expect(decided.ok && decided.state.held).toBe(parseUsd('1'));
    expect(await settled(hold.committed)).toBe(false);
    g.open();
    const committed = await hold.committed;
    expect(committed.ok && committed.state.held).toBe(parseUsd('1'));
    expect((await ledger.wallet(accountId)).held).toBe(parseUsd('1'));
  });

  it('reaches the commands queued behind an append in flight, in order', async () => {
    const { g, ledger, accountId } = await behindAGate();
    const holds = ['a', 'b', 'c'].map((name) => ledger.reserveEarly(accountId, request(accountId, name, '2')));
    const decided = await Promise.all(holds.map((h) => h.decided));
    // All three decided while the first append waits at the gate: b and c behind it.
    expect(g.appends()).toBeGreaterThanOrEqual(1);
    expect(decided.map((d) => d.ok && d.state.held)).toEqual([parseUsd('2'), parseUsd('4'), parseUsd('6')]);
    for (const h of holds) expect(await settled(h.committed)).toBe(false);
    g.open();
    const committed = await Promise.all(holds.map((h) => h.committed));
    expect(committed.map((c) => c.ok && c.state.held)).toEqual([parseUsd('2'), parseUsd('4'), parseUsd('6')]);
  });

  it('waits for the commit when the wallet could not afford the same hold once more', async () => {
    const { g, ledger, accountId } = await behindAGate();
    const hold = ledger.reserveEarly(accountId, request(accountId, 'big', '30'));
    expect(await settled(hold.decided)).toBe(false);
    g.open();
    const decided = await hold.decided;
    expect(decided.ok && decided.position).not.toBeNull();
    expect((await hold.committed).ok).toBe(true);
  });

  it('stops looking ahead at a refusal: what follows it waits for its own round', async () => {
    const { g, ledger, accountId } = await behindAGate();
    const first = ledger.reserveEarly(accountId, request(accountId, 'first', '1'));
    await first.decided;
    const tooBig = ledger.reserveEarly(accountId, request(accountId, 'too-big', '100'));
    const after = ledger.reserveEarly(accountId, request(accountId, 'after', '1'));
    expect(await settled(after.decided)).toBe(false);
    g.open();
    const refused = await tooBig.decided;
    expect(!refused.ok && refused.error.code).toBe('insufficient_funds');
    expect((await after.decided).ok).toBe(true);
    expect((await after.committed).ok).toBe(true);
  });

  it('is turned over at commit when another process spent the wallet, and not given on it for a while after', async () => {
    const g = gated(store);
    const here = ledgerOn(g.store);
    const elsewhere = t.ledger();
    const accountId = await account(here);
    await here.reserve(accountId, request(accountId, 'warm', '1'));

    // Another instance holds almost everything: this process's cached wallet does not know yet.
    expect((await elsewhere.reserve(accountId, request(accountId, 'elsewhere', '39'))).ok).toBe(true);
    const stale = here.reserveEarly(accountId, request(accountId, 'stale', '1'));
    // Decided on the cached wallet (39.44 available as far as it knows)…
    expect((await stale.decided).ok).toBe(true);
    // …and refused once the append met the other instance's events: the final word.
    const committed = await stale.committed;
    expect(!committed.ok && committed.error.code).toBe('insufficient_funds');

    // This wallet now gets no early word here: a reservation waits for its commit.
    await elsewhere.release(accountId, `${accountId}/elsewhere`, 'test');
    g.close();
    const later = here.reserveEarly(accountId, request(accountId, 'later', '0.01'));
    expect(await settled(later.decided)).toBe(false);
    g.open();
    const decided = await later.decided;
    expect(decided.ok && decided.position).not.toBeNull();
  });

  it('property: with one writer, every early word is the final word', async () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('reserve' as const), cents: fc.integer({ min: 1, max: 900 }) }),
      fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), cents: fc.integer({ min: 0, max: 900 }) }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('gate' as const), open: fc.boolean() }),
    );
    let early = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const g = gated(store);
        const ledger = ledgerOn(g.store);
        const accountId = await account(ledger);
        const open: string[] = [];
        const reserved: { decided: Promise<unknown>; committed: Promise<unknown> }[] = [];
        const others: Promise<unknown>[] = [];
        steps.forEach((s, i) => {
          if (s.kind === 'gate') return s.open ? g.open() : g.close();
          if (s.kind === 'reserve') {
            const name = `h${i}`;
            open.push(name);
            return reserved.push(ledger.reserveEarly(accountId, request(accountId, name, (s.cents / 100).toFixed(2))));
          }
          if (open.length === 0) return;
          const [name] = open.splice(s.pick % open.length, 1);
          const holdId = `${accountId}/${name}`;
          others.push(s.kind === 'settle' ? ledger.settle(accountId, holdId, parseUsd((s.cents / 100).toFixed(2))) : ledger.release(accountId, holdId, 'test'));
        });
        g.open();
        for (const hold of reserved) {
          const decided = (await hold.decided) as Awaited<ReturnType<Ledger['reserve']>>;
          const committed = (await hold.committed) as Awaited<ReturnType<Ledger['reserve']>>;
          if (decided.ok && decided.position === null) {
            early++;
            // Told early: the commit agrees, to the unit, on the state right after this hold.
            expect(committed.ok).toBe(true);
            if (committed.ok) {
              expect(committed.state.balance).toBe(decided.state.balance);
              expect(committed.state.held).toBe(decided.state.held);
            }
          } else expect(decided).toEqual(committed);
        }
        await Promise.all(others);
      }),
      { numRuns: Number(process.env.FC_RUNS_EARLY ?? 25) },
    );
    // The property is about early words: the runs must have given some.
    expect(early).toBeGreaterThan(0);
  });
});
