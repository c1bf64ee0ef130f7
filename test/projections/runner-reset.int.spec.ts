import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allProjections } from '../../src/projections';
import { ProjectionRunner } from '../../src/projections/runner/runner';
import type { Sql } from '../../src/storage/sql';
import { testDatabase, type TestDatabase } from '../support/storage';
import { chatCalls, memoryStore, walletLog } from './wallet-log';

// A database crash loses the newest events and, with them, the projection batches built from them
// and their checkpoint (the batches commit without waiting for the flush). After the restart, the
// lost positions are handed out again (Postgres' transaction ids restart from what its WAL kept).
// A runner that still believed it had applied them would answer "applied" for events it never saw.

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db.drop());

/** The database's Sql, with a reset the test fires (what a broken connection or a new server does). */
function resettable(sql: Sql) {
  const listeners = new Set<() => void>();
  const wrapped: Sql = {
    ...sql,
    onReset(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return { sql: wrapped, reset: () => listeners.forEach((listener) => listener()) };
}

describe('projection runner after the database lost its newest commits', () => {
  it('waits for an event at a position it had applied before the loss, until it has applied the new one', async () => {
    const { sql, reset } = resettable(db.sql);
    const store = memoryStore();
    const runner = new ProjectionRunner(sql, store, allProjections, { busy: () => false });
    await runner.migrate();
    store.push(walletLog(chatCalls(3), 'before').events);
    await runner.catchUp();

    // The crash: the last three events are lost, and so is the checkpoint that covered them.
    const kept = store.events.length - 3;
    store.events.splice(kept);
    const last = store.events.at(-1)!.position;
    await db.sql.query('UPDATE projection_checkpoints SET commit_position = $1::bigint, prepare_position = $2::bigint', [String(last.commit), String(last.prepare)]);
    reset();

    // Another account's events take the lost positions (with ids of their own: the lost events' rows
    // are still in this test's tables, which a real crash would have lost too).
    const at = store.push(walletLog(chatCalls(1), 'after').events.slice(0, 3));
    for (let i = kept; i < store.events.length; i++) store.events[i] = { ...store.events[i]!, id: `00000000-0000-4000-9000-${String(i).padStart(12, '0')}` };
    let applied = false;
    const waiting = runner.waitFor(at).then(() => (applied = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(applied).toBe(false);

    await runner.catchUp();
    await waiting;
    expect(await db.sql.query(`SELECT account_id FROM accounts WHERE account_id LIKE 'after-%'`)).toEqual([{ account_id: 'after-0' }]);
  });
});
