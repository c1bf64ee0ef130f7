import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/events/store/port';
import { START } from '../../src/events/store/port';
import { allProjections } from '../../src/projections';
import { IN_SLICES } from '../../src/projections/projection';
import { ProjectionRunner, StreamGapError } from '../../src/projections/runner/runner';
import type { Sql, SqlQuery } from '../../src/storage/sql';
import { testDatabase, type TestDatabase } from '../support/storage';
import { chatCalls, memoryStore, walletLog, type WalletStep } from './wallet-log';

let db: TestDatabase;
let store: ReturnType<typeof memoryStore>;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db.drop());
// Each test starts from no tables at all: the runner's migrate creates them.
beforeEach(async () => {
  const tables = ['projection_checkpoints', 'projection_stream_revisions', ...allProjections.flatMap((p) => p.tables), 'key_activity'];
  await db.sql.exec(`DROP TABLE IF EXISTS ${tables.join(', ')}`);
  store = memoryStore();
});

/** Counts what reaches the database, a transaction's BEGIN and COMMIT included. */
function counted(sql: Sql) {
  const counts = { statements: 0, transactions: 0 };
  const wrap = (q: SqlQuery): SqlQuery => ({
    query<Row>(text: string, params?: readonly unknown[]) {
      counts.statements++;
      return q.query<Row>(text, params);
    },
    copyFrom(table, columns, rows) {
      counts.statements++;
      return q.copyFrom(table, columns, rows);
    },
  });
  const wrapped: Sql = {
    ...sql,
    query: wrap(sql).query,
    transaction(fn) {
      counts.transactions++;
      counts.statements += 2;
      return sql.transaction((tx) => fn(wrap(tx)));
    },
  };
  return { sql: wrapped, counts };
}

/** Chat calls name no task (the synthetic call records name one every fifth call). */
function chatOnly(events: readonly RecordedEvent[]): RecordedEvent[] {
  return events.map((e) => {
    const call = (e.data as { call?: Record<string, unknown> }).call;
    return call ? { ...e, data: { ...(e.data as object), call: { ...call, task_id: null } } } : e;
  });
}

async function runner(sql: Sql = db.sql, busy = false) {
  // Busy or not as the test says: what a batch writes must not depend on this test process's load.
  const r = new ProjectionRunner(sql, store, allProjections, { busy: () => busy });
  await r.migrate();
  return r;
}

const snapshot = async () => {
  const out: Record<string, unknown[]> = {};
  for (const table of allProjections.flatMap((p) => p.tables)) out[table] = await db.sql.query(`SELECT * FROM ${table} ORDER BY 1, 2`);
  return out;
};

describe('projection runner', () => {
  it('applies a batch to every projection in one transaction; a full batch with as many statements as 2 chat calls, a short one in slices', async () => {
    const measured = counted(db.sql);
    const r = await runner(measured.sql);
    const perCatchUp: Array<typeof measured.counts> = [];
    // An account's opening (2 events) and 249 calls are 500 events, a full read: the runner is
    // behind and writes each table at once.
    for (const [prefix, n] of [['small', 2], ['full', 249], ['short', 100]] as const) {
      store.push(chatOnly(walletLog(chatCalls(n), prefix).events));
      measured.counts.statements = 0;
      measured.counts.transactions = 0;
      await r.catchUp();
      perCatchUp.push({ ...measured.counts });
    }
    const [small, full, short] = perCatchUp;
    expect(small!.transactions).toBe(1);
    expect(full).toEqual(small);
    // 100 calls that caught up with the log: 201 ledger rows (the grant's too), 100 holds and 100
    // call-log rows, IN_SLICES.rowsPerStatement rows a statement.
    const extra = (rows: number) => Math.ceil(rows / IN_SLICES.rowsPerStatement) - 1;
    expect(short).toEqual({ transactions: 1, statements: small!.statements + extra(201) + extra(100) + extra(100) });
    for (const p of allProjections) expect(await r.checkpoint(p.name)).toEqual(store.events.at(-1)!.position);
    expect(await db.sql.query('SELECT count(*)::int AS n FROM call_log')).toEqual([{ n: 351 }]);

    // Closings of task holds in a batch (their call records name a task) cost the task views one statement.
    store.push(walletLog(chatCalls(249), 'tasks').events);
    measured.counts.statements = 0;
    await r.catchUp();
    expect(measured.counts.statements).toBe(small!.statements + 1);
  });

  it('writes a short batch in whole statements while the process is busy', async () => {
    const measured = counted(db.sql);
    const r = await runner(measured.sql, true);
    const perCatchUp: number[] = [];
    for (const [prefix, n] of [['small', 2], ['short', 100]] as const) {
      store.push(chatOnly(walletLog(chatCalls(n), prefix).events));
      measured.counts.statements = 0;
      await r.catchUp();
      perCatchUp.push(measured.counts.statements);
    }
    expect(perCatchUp[1]).toBe(perCatchUp[0]);
    expect(await db.sql.query('SELECT count(*)::int AS n FROM call_log')).toEqual([{ n: 102 }]);
  });

  it('a runner that does not apply the log (PROJECTIONS=external) only follows the checkpoints of the one that does', async () => {
    const worker = await runner(db.sql);
    const measured = counted(db.another());
    const follower = new ProjectionRunner(measured.sql, store, allProjections, { applies: false, pollMs: 10_000 });
    const errors: unknown[] = [];
    follower.start((error) => errors.push(error));
    try {
      const head = store.push(chatOnly(walletLog(chatCalls(20)).events));
      const waited = follower.waitFor(head);
      let done = false;
      void waited.then(() => (done = true));
      await new Promise((r) => setTimeout(r, 50));
      // It wrote nothing, and nothing has applied the events: it is still waiting.
      expect(done).toBe(false);
      expect(measured.counts.transactions).toBe(0);
      expect(await db.sql.query('SELECT count(*)::int AS n FROM call_log')).toEqual([{ n: 0 }]);
      // The worker applies them; the follower sees its checkpoints move within a few milliseconds (not its 10 s poll).
      await worker.catchUp();
      await waited;
      expect(await db.sql.query('SELECT count(*)::int AS n FROM call_log')).toEqual([{ n: 20 }]);
      for (const p of allProjections) expect(await follower.checkpoint(p.name)).toEqual(head);
      expect(measured.counts.transactions).toBe(0);
      // catchUpToHead waits for the worker too.
      const more = store.push(chatOnly(walletLog(chatCalls(3), 'more').events));
      const caughtUp = follower.catchUpToHead(5_000);
      await worker.catchUp();
      await caughtUp;
      await follower.waitFor(more);
      expect(errors).toEqual([]);
    } finally {
      await follower.stop();
    }
  });

  it('lets several instances run at once: each event is applied once, batches of 500 included', async () => {
    const a = await runner(db.sql);
    const b = await runner(db.another());
    const steps: WalletStep[] = [];
    for (let i = 0; i < 300; i++) steps.push(...chatCalls(1, i % 4).map((s) => ({ ...s, hold: Math.floor(i / 4) })));
    const log = walletLog(steps).events;
    for (let at = 0; at < log.length; ) {
      const size = at === 0 ? 520 : 37;
      store.push(log.slice(at, at + size));
      at += size;
      await Promise.all([a.catchUp(), b.catchUp(), a.catchUp()]);
    }
    const live = await snapshot();
    expect((live.ledger_entries as unknown[]).length).toBe(4 + 600);
    for (const p of allProjections) expect(await b.checkpoint(p.name)).toEqual(store.events.at(-1)!.position);
    await a.catchUpToHead();
    await b.catchUpToHead();
    for (const p of allProjections) await a.rebuild(p.name);
    expect(await snapshot()).toEqual(live);
  });

  it('stops the projections that follow a stream with a gap; the others go on', async () => {
    const r = await runner();
    const log = walletLog(chatCalls(3)).events;
    const gap = log.filter((_, i) => i !== 3);
    const keyIssued: RecordedEvent = {
      ...log[0]!,
      streamId: 'key-k1',
      revision: 0n,
      type: 'KeyIssued',
      data: {
        key_id: 'k1',
        account_id: 'acct-0',
        name: 'k',
        prefix: 'sk-test',
        hash: 'ab'.repeat(32),
        revealable: false,
        allowed_models: null,
        expires_at: null,
        enabled: true,
        spend_cap: null,
        at: 1_700_000_000,
      },
    };
    const head = store.push([...gap, keyIssued]);
    const failure = await r.catchUp().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StreamGapError);
    expect(failure).toMatchObject({ streamId: 'wallet-acct-0', expected: 3n, found: 4n });
    expect(await r.checkpoint('keys')).toEqual(head);
    expect(await r.checkpoint('knowledge')).toEqual(head);
    for (const name of ['accounts', 'ledger', 'audit', 'call-log']) expect(await r.checkpoint(name)).toEqual(START);
    expect(await db.sql.query('SELECT key_id FROM api_keys')).toEqual([{ key_id: 'k1' }]);
    expect(await db.sql.query('SELECT count(*)::int AS n FROM accounts')).toEqual([{ n: 0 }]);
    await expect(r.catchUpToHead(200)).rejects.toBeInstanceOf(StreamGapError);
  });

  it('rebuilds one projection from position 0 while the others stay where they are', async () => {
    const r = await runner();
    store.push(walletLog(chatCalls(5)).events);
    await r.catchUpToHead();
    const before = await snapshot();
    const stamps = async () => db.sql.query<{ name: string; at: string }>('SELECT name, updated_at::text AS at FROM projection_checkpoints ORDER BY name');
    const others = (await stamps()).filter((s) => s.name !== 'ledger');
    await db.sql.query('DELETE FROM ledger_entries WHERE seq = 3');
    await r.rebuild('ledger');
    expect(await snapshot()).toEqual(before);
    expect((await stamps()).filter((s) => s.name !== 'ledger')).toEqual(others);
    expect(await r.checkpoint('ledger')).toEqual(store.events.at(-1)!.position);
  });

  it('leaves a projection another runner is rebuilding to that rebuild, and takes it up again once the rebuild ends or its lease runs out', async () => {
    const r = await runner();
    store.push(walletLog(chatCalls(6)).events);
    await r.catchUpToHead();
    const before = await snapshot();
    // The rebuild of the ledger stops after its first batch until the test lets it go on (outside any
    // transaction: embedded PGlite has one connection).
    let paused!: () => void;
    const reachedPause = new Promise<void>((resolve) => (paused = resolve));
    let resume!: () => void;
    const gate = new Promise<void>((resolve) => (resume = resolve));
    let rebuildReads = 0;
    const gated = {
      ...store,
      readAll: async (...args: Parameters<typeof store.readAll>) => {
        if (++rebuildReads === 2) {
          paused();
          await gate;
        }
        return store.readAll(...args);
      },
    };
    const rebuilding = new ProjectionRunner(db.sql, gated, allProjections, { rebuildBatch: 3 }).rebuild('ledger');
    await reachedPause;
    // A serving gateway's runner, following the log meanwhile: what it reads of it is counted.
    let reads = 0;
    const counting = { ...store, readAll: (...args: Parameters<typeof store.readAll>) => (reads++, store.readAll(...args)) };
    const follower = new ProjectionRunner(db.sql, counting, allProjections.filter((p) => p.name === 'ledger'), { busy: () => false });
    await follower.catchUp();
    expect(reads).toBe(0);
    const [{ n: partial } = { n: 0 }] = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries');
    expect(partial).toBeLessThan(before.ledger_entries!.length);
    resume();
    await rebuilding;
    expect(await snapshot()).toEqual(before);
    // Released: the follower reads the log again (and finds nothing left to apply).
    store.push(walletLog(chatCalls(1), 'other').events);
    await follower.catchUp();
    expect(reads).toBeGreaterThan(0);
    expect(await follower.checkpoint('ledger')).toEqual(store.events.at(-1)!.position);

    // A rebuild killed outright leaves its lease behind: followed again once it has run out.
    await db.sql.query("UPDATE projection_checkpoints SET rebuild_until = now() + interval '1 hour' WHERE name = 'ledger'");
    const head = store.push(walletLog(chatCalls(1), 'third').events);
    await follower.catchUp();
    expect(await follower.checkpoint('ledger')).not.toEqual(head);
    await db.sql.query("UPDATE projection_checkpoints SET rebuild_until = now() - interval '1 second' WHERE name = 'ledger'");
    await follower.catchUp();
    expect(await follower.checkpoint('ledger')).toEqual(head);
  });

  it('a rebuild tells its own failure, not a failed release of its lease; a release that fails alone does not fail it', async () => {
    await runner();
    store.push(walletLog(chatCalls(3)).events);
    // The statement that ends the lease fails, as it would with the database gone.
    const releaseFails: Sql = {
      ...db.sql,
      query<Row>(text: string, params?: readonly unknown[]) {
        if (text.includes('SET rebuild_until') && params?.[1] === null) return Promise.reject(new Error('release failed'));
        return db.sql.query<Row>(text, params);
      },
    };
    const broken = { ...store, readAll: async () => Promise.reject(new Error('the log is unreadable')) };
    await expect(new ProjectionRunner(releaseFails, broken, allProjections, { rebuildBatch: 3 }).rebuild('ledger')).rejects.toThrow('the log is unreadable');
    await expect(new ProjectionRunner(releaseFails, store, allProjections, { rebuildBatch: 3 }).rebuild('ledger')).resolves.toBeUndefined();
    // The lease was left to lapse, not cleared.
    const [lease] = await db.sql.query<{ held: boolean }>("SELECT rebuild_until > now() AS held FROM projection_checkpoints WHERE name = 'ledger'");
    expect(lease!.held).toBe(true);
  });

  it('in the background, settles waitFor once every projection has applied a position', async () => {
    const r = await runner();
    const errors: unknown[] = [];
    r.start((e) => errors.push(e));
    try {
      await r.waitFor(store.push(walletLog(chatCalls(2)).events));
      expect(await db.sql.query('SELECT count(*)::int AS n FROM call_log')).toEqual([{ n: 2 }]);
      const next = store.push(walletLog(chatCalls(1), 'other').events);
      await r.waitFor(next);
      for (const p of allProjections) expect(await r.checkpoint(p.name)).toEqual(next);
    } finally {
      await r.stop();
    }
    expect(errors).toEqual([]);
  });
});
