import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { allProjections } from '../../src/projections';
import type { Projection } from '../../src/projections/projection';
import { ProjectionRunner, type RebuildProgress } from '../../src/projections/runner/runner';
import { verifyLedger } from '../../src/projections/verify';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

const TABLES: Record<string, string> = {
  accounts: 'SELECT * FROM accounts ORDER BY account_id',
  holds: 'SELECT * FROM holds ORDER BY account_id, hold_id',
  key_spend: 'SELECT * FROM key_spend ORDER BY key_id',
  api_keys: 'SELECT * FROM api_keys ORDER BY key_id',
  ledger_entries: 'SELECT * FROM ledger_entries ORDER BY account_id, seq',
  audit_trail: 'SELECT * FROM audit_trail ORDER BY event_id',
};

async function snapshot() {
  const out: Record<string, unknown[]> = {};
  for (const [name, query] of Object.entries(TABLES)) out[name] = await t.db.sql.query(query);
  return out;
}

/** The projections' indexes (a rebuild drops the secondary ones and builds them again), by table. */
async function indexes() {
  const tables = allProjections.flatMap((p) => p.tables);
  return t.db.sql.query<{ tablename: string; indexname: string }>(
    'SELECT tablename, indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY($1::text[]) ORDER BY tablename, indexname',
    [tables],
  );
}

type Step =
  | { kind: 'topup'; account: number; cents: number }
  | { kind: 'reserve'; account: number; key: number; cents: number }
  | { kind: 'settle'; hold: number; cents: number }
  | { kind: 'release'; hold: number }
  | { kind: 'key'; account: number; cap: number | null }
  | { kind: 'update'; key: number; enabled: boolean }
  | { kind: 'deactivate' | 'reactivate'; account: number }
  | { kind: 'limits'; account: number; rpm: number | null };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('topup' as const), account: fc.nat(3), cents: fc.integer({ min: 10_000, max: 30_000 }) }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('reserve' as const), account: fc.nat(3), key: fc.nat(5), cents: fc.integer({ min: 1, max: 2_000 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('settle' as const), hold: fc.nat(40), cents: fc.integer({ min: 0, max: 3_000 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), hold: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('key' as const), account: fc.nat(3), cap: fc.option(fc.integer({ min: 100, max: 5_000 })) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('update' as const), key: fc.nat(5), enabled: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('deactivate' as const, 'reactivate' as const), account: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('limits' as const), account: fc.nat(3), rpm: fc.option(fc.integer({ min: 1, max: 1000 })) }) },
);

describe('projections', () => {
  it('rebuilt from the log equal the live ones after a random workload, and ledger verify is clean', async () => {
    const ledger = t.gateway.ledger;
    const workload = fc.sample(fc.array(step, { minLength: 150, maxLength: 150 }), { numRuns: 1, seed: Number(process.env.WORKLOAD_SEED ?? 42) })[0]!;
    const accounts: string[] = [];
    for (let i = 0; i < 4; i++) {
      const opened = await ledger.openAccount(`acct ${i}`);
      if (opened.ok) accounts.push(opened.accountId);
    }
    const keys: Array<{ id: string; account: string }> = [];
    const holds: Array<{ id: string; account: string }> = [];
    const cents = (n: number) => parseUsd((n / 100).toFixed(2));
    for (const s of workload) {
      switch (s.kind) {
        case 'topup':
          await ledger.topUp(accounts[s.account]!, cents(s.cents), `ref-${s.cents}`);
          break;
        case 'key': {
          const issued = await ledger.issueKey(accounts[s.account]!, {
            name: `k${keys.length}`,
            allowed_models: null,
            expires_at: null,
            enabled: true,
            spend_cap: s.cap === null ? null : cents(s.cap),
          });
          if (issued.ok) keys.push({ id: issued.keyId, account: accounts[s.account]! });
          break;
        }
        case 'reserve': {
          const key = keys.length ? keys[s.key % keys.length]! : null;
          const account = key?.account ?? accounts[s.account]!;
          const id = `hold-${holds.length}`;
          const reserved = await ledger.reserve(account, { holdId: id, amount: cents(s.cents), keyId: key?.id ?? null, purpose: 'chat', ttlSeconds: 300 });
          if (reserved.ok) holds.push({ id, account });
          break;
        }
        case 'settle': {
          const hold = holds[s.hold % Math.max(holds.length, 1)];
          if (hold) await ledger.settle(hold.account, hold.id, cents(s.cents));
          break;
        }
        case 'release': {
          const hold = holds[s.hold % Math.max(holds.length, 1)];
          if (hold) await ledger.release(hold.account, hold.id, 'upstream failed');
          break;
        }
        case 'update': {
          const key = keys[s.key % Math.max(keys.length, 1)];
          if (key) await ledger.updateKey(key.id, { enabled: s.enabled });
          break;
        }
        case 'deactivate':
          await ledger.deactivate(accounts[s.account]!, 'test');
          break;
        case 'reactivate':
          await ledger.reactivate(accounts[s.account]!);
          break;
        case 'limits':
          await ledger.setLimits(accounts[s.account]!, s.rpm, null);
          break;
      }
    }
    await t.gateway.runner.catchUpToHead();
    expect(holds.length).toBeGreaterThan(5);
    const live = await snapshot();
    expect(live.ledger_entries!.length).toBeGreaterThan(20);
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql)).toEqual([]);
    const indexed = await indexes();
    expect(indexed).toEqual(expect.arrayContaining([{ tablename: 'ledger_entries', indexname: 'ledger_entries_by_hold' }]));

    await t.gateway.runner.stop();
    // All of them in one pass: the log is read once, whatever the number of projections.
    const told: RebuildProgress[] = [];
    await t.gateway.runner.rebuild(
      t.gateway.runner.projections.map((p) => p.name),
      (progress) => told.push(progress),
    );
    const [{ n: logged } = { n: 0 }] = await t.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM events');
    expect(told.at(-1)!.events).toBe(logged);
    expect(told.at(-1)!.at).toEqual(told.at(-1)!.head);
    expect(await snapshot()).toEqual(live);
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql)).toEqual([]);
    expect(await indexes()).toEqual(indexed);

    // In small batches: what a rebuild carries in memory from batch to batch (running balances, the
    // keys of holds reserved in an earlier batch) gives the rows the live runner wrote.
    const small = new ProjectionRunner(t.db.sql, t.gateway.storage.store, allProjections, { rebuildBatch: 7 });
    await small.rebuild(allProjections.map((p) => p.name));
    expect(await snapshot()).toEqual(live);
    expect(await indexes()).toEqual(indexed);
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql)).toEqual([]);

    // The ledger failing in the rebuild: its batch is applied again alone, and from then on without the rebuild's
    // memory (which the rolled-back batch may have changed), reading its tables as the live runner does.
    const failingFrom = (first: number, last: number) => {
      let batches = 0;
      return allProjections.map((p): Projection =>
        p.name !== 'ledger'
          ? p
          : {
              ...p,
              applyBatch: (tx, items, writes, memory) => {
                batches += 1;
                if (batches >= first && batches <= last) throw new Error('connection lost');
                return p.applyBatch(tx, items, writes, memory);
              },
            },
      );
    };
    await new ProjectionRunner(t.db.sql, t.gateway.storage.store, failingFrom(3, 3), { rebuildBatch: 7 }).rebuild(allProjections.map((p) => p.name));
    expect(await snapshot()).toEqual(live);
    expect(await indexes()).toEqual(indexed);

    // A rebuild that dies half-way leaves the projections rebuildable: their indexes are back, and the live
    // runner goes on from where each stopped to the same rows.
    const dying = new ProjectionRunner(t.db.sql, t.gateway.storage.store, failingFrom(3, Infinity), { rebuildBatch: 7 });
    await expect(dying.rebuild(allProjections.map((p) => p.name))).rejects.toThrow('connection lost');
    expect(await indexes()).toEqual(indexed);
    const [ledgerRows] = await t.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries');
    expect(ledgerRows!.n).toBeLessThan(live.ledger_entries!.length);
    await new ProjectionRunner(t.db.sql, t.gateway.storage.store, allProjections).catchUpToHead();
    expect(await snapshot()).toEqual(live);
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql)).toEqual([]);

    // verify catches a projection that no longer says what the events say.
    await t.db.sql.query('UPDATE accounts SET balance = balance + 1 WHERE account_id = $1', [accounts[0]]);
    await t.db.sql.query('DELETE FROM ledger_entries WHERE account_id = $1 AND seq = 1', [accounts[1]]);
    const differences = await verifyLedger(t.gateway.storage.store, t.db.sql);
    expect(differences).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ subject: `account ${accounts[0]}`, field: 'balance' }),
        expect.objectContaining({ subject: `account ${accounts[1]}`, field: 'ledger entries' }),
      ]),
    );
    expect((await verifyLedger(t.gateway.storage.store, t.db.sql, { accountId: accounts[2]! })).length).toBe(0);
    await t.gateway.runner.rebuild('accounts');
    await t.gateway.runner.rebuild('ledger');
    expect(await verifyLedger(t.gateway.storage.store, t.db.sql)).toEqual([]);
  });
});
