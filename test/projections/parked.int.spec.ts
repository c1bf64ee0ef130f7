import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/events/store/port';
import { allProjections } from '../../src/projections';
import type { Projection } from '../../src/projections/projection';
import { ProjectionRunner, type Parking } from '../../src/projections/runner/runner';
import type { Sql } from '../../src/storage/sql';
import { testDatabase, type TestDatabase } from '../support/storage';
import { chatCalls, memoryStore, walletLog, type WalletStep } from './wallet-log';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db.drop());
const TABLES = ['projection_checkpoints', 'projection_stream_revisions', 'projection_parked_events', ...allProjections.flatMap((p) => p.tables), 'key_activity'];
const dropAll = () => db.sql.exec(`DROP TABLE IF EXISTS ${TABLES.join(', ')}`);
beforeEach(dropAll);

type Store = ReturnType<typeof memoryStore>;

async function runner(store: Store, projections: readonly Projection[] = allProjections, sql: Sql = db.sql) {
  const parked: Array<{ projection: string; events: readonly Parking[] }> = [];
  const r = new ProjectionRunner(sql, store, projections, { busy: () => false, onParked: (projection, events) => parked.push({ projection, events }) });
  await r.migrate();
  return Object.assign(r, { told: parked });
}

/** Every projection table and the runner's own, in a stable order (parked_at left out: a time). */
async function snapshot() {
  const out: Record<string, unknown[]> = {};
  for (const table of allProjections.flatMap((p) => p.tables)) out[table] = await db.sql.query(`SELECT * FROM ${table} ORDER BY 1, 2`);
  out.revisions = await db.sql.query('SELECT * FROM projection_stream_revisions ORDER BY 1, 2');
  out.parked = await db.sql.query(
    `SELECT projection, stream_id, revision::text, event_id, event_type, commit_position::text, prepare_position::text, error
       FROM projection_parked_events ORDER BY 1, 2, 3`,
  );
  return out;
}

/** Three accounts' chat calls, interleaved. */
const steps: WalletStep[] = [0, 1, 2, 3, 4, 5].flatMap((i) => [0, 1, 2].flatMap((account) => chatCalls(1, account).map((s) => ({ ...s, hold: i }))));

const WALLET_PROJECTIONS = ['accounts', 'ledger', 'audit', 'call-log', 'tasks'];

describe('parked events', () => {
  it('parks an event no projection can decode and every later event of its stream; every other stream goes on; a rebuild comes back identical', async () => {
    const store = memoryStore();
    store.push(walletLog(steps).events);
    // Account 1's first settlement with the usage block, and account 2's last event of a type no one knows.
    const settled = store.events.findIndex((e) => e.streamId === 'wallet-acct-1' && e.type === 'HoldSettled');
    const original = store.events[settled]!;
    const data = original.data as { call: Record<string, unknown> };
    store.events[settled] = { ...original, data: { ...data, call: { ...data.call, input_tokens: 1e20 } } };
    const last2 = store.events.findLastIndex((e) => e.streamId === 'wallet-acct-2');
    store.events[last2] = { ...store.events[last2]!, type: 'LegacyWalletEvent', data: {} };
    const r = await runner(store);
    await r.catchUpToHead();

    const parkedOf = (stream: string) => store.events.filter((e) => e.streamId === stream && e.revision >= (stream === 'wallet-acct-1' ? original.revision : store.events[last2]!.revision));
    const expected = [...parkedOf('wallet-acct-1'), ...parkedOf('wallet-acct-2')];
    const listed = await r.parkedEvents();
    expect(listed.length).toBe(expected.length * WALLET_PROJECTIONS.length);
    for (const name of WALLET_PROJECTIONS)
      expect(listed.filter((p) => p.projection === name).map((p) => [p.streamId, p.revision, p.eventId, p.position])).toEqual(
        expected.map((e) => [e.streamId, e.revision, e.id, e.position]).sort((a, b) => Number((a[3] as { prepare: bigint }).prepare - (b[3] as { prepare: bigint }).prepare)),
      );
    const first = listed.find((p) => p.projection === 'accounts' && p.eventId === original.id)!;
    expect(first.error).toMatch(/^cannot be decoded: call\.input_tokens: /);
    expect(listed.find((p) => p.projection === 'accounts' && p.revision === original.revision + 1n)!.error).toBe(
      `an earlier event of this stream (revision ${original.revision}) is parked`,
    );
    expect(listed.find((p) => p.projection === 'accounts' && p.streamId === 'wallet-acct-2')!.error).toBe('cannot be decoded: unknown event type LegacyWalletEvent');
    expect(await r.parkedCounts()).toEqual(new Map(allProjections.map((p) => [p.name, WALLET_PROJECTIONS.includes(p.name) ? expected.length : 0])));
    // The runner told of each parking once.
    expect(r.told.flatMap((t) => t.events.map((e) => `${t.projection} ${e.event.id}`)).sort()).toEqual(
      listed.map((p) => `${p.projection} ${p.eventId}`).sort(),
    );

    // Later events of a parked stream are parked too (no gap, no error), by any instance (another runner
    // here: what is parked is known from the database); other streams are applied.
    const more = walletLog([...steps, ...chatCalls(1, 1).map((s) => ({ ...s, hold: 6 })), ...chatCalls(1, 0).map((s) => ({ ...s, hold: 6 }))]).events.slice(store.events.length);
    expect(more.map((e) => e.streamId)).toEqual(['wallet-acct-1', 'wallet-acct-1', 'wallet-acct-0', 'wallet-acct-0']);
    const head = store.push(more);
    const other = await runner(store, allProjections, db.another());
    await other.catchUpToHead();
    for (const p of allProjections) expect(await r.checkpoint(p.name)).toEqual(head);
    expect((await r.parkedCounts()).get('accounts')).toBe(expected.length + 2);
    expect(other.told.flatMap((t) => t.events.map((e) => `${t.projection} ${e.event.streamId} ${e.error}`))).toEqual(
      WALLET_PROJECTIONS.flatMap((name) => [0, 1].map(() => `${name} wallet-acct-1 an earlier event of this stream (revision ${original.revision}) is parked`)),
    );
    expect(await db.sql.query(`SELECT count(*)::int AS n FROM holds WHERE account_id = 'acct-0'`)).toEqual([{ n: 7 }]);
    const live = await snapshot();

    // The read models hold exactly what the log says without the parked events (the same log, those left out).
    const parkedIds = new Set((await r.parkedEvents()).map((p) => p.eventId));
    await dropAll();
    const without = memoryStore();
    without.events.push(...store.events.filter((e) => !parkedIds.has(e.id)));
    const reference = await runner(without);
    await reference.catchUpToHead();
    const clean = await snapshot();
    for (const table of allProjections.flatMap((p) => p.tables)) expect(live[table], table).toEqual(clean[table]);
    await dropAll();

    // A rebuild from the log parks the same events and gives the same rows.
    const again = await runner(store);
    await again.catchUpToHead();
    expect(await snapshot()).toEqual(live);
    for (const p of allProjections) await again.rebuild(p.name);
    expect(await snapshot()).toEqual(live);
  });

  it('parks an event whose rows a table refuses (a bigint overflow), event by event, only in the projections it breaks', async () => {
    const store = memoryStore();
    const log = walletLog(steps).events;
    // Two top-ups of the largest amount an event may carry: they decode, but a balance over 2^63 does not fit.
    const opening = log.find((e) => e.streamId === 'wallet-acct-1' && e.type === 'CreditGranted')!;
    const topUp = (revision: bigint, n: number): RecordedEvent => ({
      ...opening,
      revision,
      type: 'WalletToppedUp',
      data: { topup_id: `huge-${n}`, amount: String(2n ** 63n - 1n), reference: 'overflow', at: 1_700_000_100 },
    });
    const wallet1 = log.filter((e) => e.streamId === 'wallet-acct-1');
    const at = log.indexOf(wallet1[2]!);
    // Renumber account 1's later events around the two inserted ones.
    const shifted = log.map((e, i) => (i > at && e.streamId === 'wallet-acct-1' ? { ...e, revision: e.revision + 2n } : e));
    shifted.splice(at + 1, 0, topUp(wallet1[2]!.revision + 1n, 1), topUp(wallet1[2]!.revision + 2n, 2));
    store.push(shifted);
    const r = await runner(store);
    await r.catchUpToHead();
    const counts = await r.parkedCounts();
    // The accounts and ledger tables cannot hold the balance; the audit trail and the call log can.
    const after = shifted.filter((e) => e.streamId === 'wallet-acct-1' && e.revision > wallet1[2]!.revision).length;
    expect(Object.fromEntries(counts)).toEqual({ accounts: after, keys: 0, ledger: after, audit: 0, knowledge: 0, 'call-log': 0, tasks: 0, enterprises: 0, channels: 0, payments: 0 });
    const listed = (await r.parkedEvents()).filter((p) => p.projection === 'accounts');
    expect(listed[0]!.error).toMatch(/^cannot be applied: \[22003\] /);
    expect(await db.sql.query(`SELECT account_id FROM accounts ORDER BY account_id`)).toEqual([{ account_id: 'acct-0' }, { account_id: 'acct-1' }, { account_id: 'acct-2' }]);
    // Accounts 0 and 2 have all their calls; account 1 what it had before the top-up.
    const calls = await db.sql.query<{ account_id: string; n: number }>('SELECT account_id, count(*)::int AS n FROM holds GROUP BY 1 ORDER BY 1');
    expect(calls).toEqual([
      { account_id: 'acct-0', n: 6 },
      { account_id: 'acct-1', n: 1 },
      { account_id: 'acct-2', n: 6 },
    ]);
    const live = await snapshot();
    for (const p of allProjections) await r.rebuild(p.name);
    expect(await snapshot()).toEqual(live);
  });

  it('parks what a projection bug throws on (TypeError) in that projection only; an error that may go away (a lost connection) parks nothing', async () => {
    const store = memoryStore();
    store.push(walletLog(chatCalls(4, 0)).events);
    let connectionLost = true;
    const fragile: Projection = {
      name: 'fragile',
      streams: ['wallet-'],
      tables: [],
      schema: 'SELECT 1',
      async applyBatch(_tx, items) {
        if (connectionLost) throw new Error('Connection terminated unexpectedly');
        for (const { event } of items) if (event.type === 'HoldSettled' && event.data.hold_id === 'hold-2') throw new TypeError("Cannot read properties of undefined (reading 'x')");
      },
    };
    const r = await runner(store, [allProjections[0]!, fragile]);
    await expect(r.catchUp()).rejects.toThrow('Connection terminated unexpectedly');
    expect(Object.fromEntries(await r.parkedCounts())).toEqual({ accounts: 0, fragile: 0 });
    expect(await r.checkpoint('fragile')).toEqual({ commit: -1n, prepare: -1n });
    connectionLost = false;
    await r.catchUpToHead();
    const parked = await r.parkedEvents();
    const settle2 = store.events.find((e) => e.type === 'HoldSettled' && (e.data as { hold_id: string }).hold_id === 'hold-2')!;
    expect(parked.map((p) => [p.projection, p.revision])).toEqual([
      ['fragile', settle2.revision],
      ['fragile', settle2.revision + 1n],
      ['fragile', settle2.revision + 2n],
    ]);
    expect(parked[0]!.error).toBe("cannot be applied: Cannot read properties of undefined (reading 'x')");
    expect(await db.sql.query('SELECT count(*)::int AS n FROM holds')).toEqual([{ n: 4 }]);
  });
});
