import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postgresSql, type Sql } from '../../src/storage/sql';
import { PrivatePostgres, postgresBinaries } from '../support/private-postgres';

// A Postgres server restarted, crashed or failed over under the gateway: every connection it had
// breaks. The process must carry on (a client's 'error' event that nobody hears ends it), fail
// what was in flight, reconnect, and tell its caches (Sql.onReset) before the new server's first
// answer is used. On a cluster of this file's own (pg_ctl); run with the Postgres suite only
// (DATABASE_URL set), where the server binaries are expected.

describe.skipIf(!postgresBinaries || !process.env.DATABASE_URL)('a database restart under the storage layer', () => {
  let cluster: PrivatePostgres;
  const pools: Sql[] = [];
  const open = (options: Parameters<typeof postgresSql>[1] = {}) => {
    const sql = postgresSql(cluster.url, options);
    pools.push(sql);
    return sql;
  };

  beforeAll(async () => {
    cluster = await PrivatePostgres.create();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close().catch(() => {})));
    await cluster?.destroy();
  });

  it('fails the transaction it cuts, and the process goes on on a new connection', async () => {
    const sql = open({ max: 1 });
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    let began!: () => void;
    const inside = new Promise<void>((resolve) => (began = resolve));
    // The transaction's client is checked out and idle (its caller is busy) when the server goes.
    const cut = sql.transaction(async (tx) => {
      await tx.query('SELECT 1');
      began();
      await paused;
      return tx.query('SELECT 2');
    });
    await inside;
    await cluster.restart('fast');
    resume();
    await expect(cut).rejects.toThrow();
    // The pool's only connection was the broken one: it must not be handed out again.
    expect(await sql.query<{ n: number }>('SELECT 3 AS n')).toEqual([{ n: 3 }]);
    expect(await sql.transaction((tx) => tx.query<{ n: number }>('SELECT 4 AS n'))).toEqual([{ n: 4 }]);
  });

  it('fails a statement in flight when the server crashes, then works again', async () => {
    const sql = open();
    const slow = sql.query('SELECT pg_sleep(5)').then(
      () => 'answered',
      (error: unknown) => error,
    );
    // Let the statement reach the server before it goes.
    await new Promise((r) => setTimeout(r, 200));
    await cluster.restart('immediate');
    expect(await slow).toBeInstanceOf(Error);
    expect(await sql.query<{ n: number }>('SELECT 5 AS n')).toEqual([{ n: 5 }]);
  });

  it('tells its listeners when connections break', async () => {
    const sql = open();
    let resets = 0;
    sql.onReset(() => resets++);
    await sql.query('SELECT 1');
    await cluster.restart('fast');
    // The idle connection's error arrives on its own; the next statement then reconnects.
    await vi.waitFor(() => expect(resets).toBeGreaterThan(0), { timeout: 15_000, interval: 20 });
    await sql.query('SELECT 1');
  });

  it('tells its listeners of a restart that no connection saw, before the new server answers', async () => {
    // Connections close when idle: the restart below happens while the pool has none.
    const sql = open({ idleTimeoutMs: 1 });
    await sql.query('SELECT 1');
    await new Promise((r) => setTimeout(r, 100));
    let resets = 0;
    sql.onReset(() => resets++);
    await cluster.restart('fast');
    expect(resets).toBe(0);
    const seen: number[] = [];
    await sql.query('SELECT 1').then(() => seen.push(resets));
    expect(seen).toEqual([1]);
    // The same server again: nothing to tell.
    await new Promise((r) => setTimeout(r, 100));
    await sql.query('SELECT 1');
    expect(resets).toBe(1);
  });
});
