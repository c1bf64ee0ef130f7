import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openEmbeddedDatabase } from '../../src/runtime/storage';
import { settingsFromEnv } from '../../src/runtime/settings';
import { isAlive } from '../../src/storage/data-dir-lock';
import { startEmbeddedPostgres, stopLeftServer } from '../../src/storage/embedded-postgres';
import { openPglite, postgresSql } from '../../src/storage/sql';

// The embedded default's database (issue 35, item 1): a Postgres server of the gateway's own under
// DATA_DIR, reached on a Unix socket only, which outlives a killed gateway with what it committed.

const dirs: string[] = [];
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-embedded-'));
  // As root the server runs as the `postgres` user, which must reach the directory.
  if (process.getuid?.() === 0) chmodSync(dir, 0o711);
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  for (const dir of dirs.splice(0)) {
    await stopLeftServer(join(dir, 'postgres'), 'SIGQUIT');
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A row committed through the server at `url`, and what a later connection finds of it. */
async function commitCall(url: string) {
  const sql = postgresSql(url);
  await sql.exec('CREATE TABLE calls (id text)');
  await sql.query('INSERT INTO calls VALUES ($1)', ['answered']);
  await sql.close();
}
async function committedCalls(url: string) {
  const sql = postgresSql(url);
  try {
    return await sql.query('SELECT id FROM calls');
  } finally {
    await sql.close();
  }
}

const serverPid = (cluster: string) => Number(readFileSync(join(cluster, 'postmaster.pid'), 'utf8').split('\n')[0]);

describe('the embedded Postgres server', () => {
  it('creates its cluster on first use, listens on a Unix socket only, and is gone after stop()', async () => {
    const cluster = join(dataDir(), 'postgres');
    const server = await startEmbeddedPostgres(cluster);
    expect(server.started).toBe(true);
    const pid = serverPid(cluster);
    const sql = postgresSql(server.url);
    const [settings] = await sql.query<{ listen: string; fsync: string; commit: string }>(
      "SELECT current_setting('listen_addresses') AS listen, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS commit",
    );
    // No TCP port: nothing else on the machine (or beyond it) can reach it, and no port can collide.
    expect(settings).toEqual({ listen: '', fsync: 'on', commit: 'on' });
    await sql.exec('CREATE TABLE kept (n int)');
    await sql.close();
    await server.stop();
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(join(cluster, 'postmaster.pid'))).toBe(false);
  });

  it('keeps what it committed when the gateway dies, and the next start adopts the running server', async () => {
    const cluster = join(dataDir(), 'postgres');
    const first = await startEmbeddedPostgres(cluster);
    await commitCall(first.url);
    // The gateway is gone without stopping the server (a kill): it is still there, with the row.
    const second = await startEmbeddedPostgres(cluster);
    expect(second.started).toBe(false);
    expect(await committedCalls(second.url)).toEqual([{ id: 'answered' }]);
    await second.stop();
  });

  it('is recovered from its WAL after a crash of the server itself', async () => {
    const cluster = join(dataDir(), 'postgres');
    const first = await startEmbeddedPostgres(cluster);
    await commitCall(first.url);
    await stopLeftServer(cluster, 'SIGQUIT');
    const second = await startEmbeddedPostgres(cluster);
    expect(second.started).toBe(true);
    expect(await committedCalls(second.url)).toEqual([{ id: 'answered' }]);
    await second.stop();
  });

  it('puts its socket in a short directory when DATA_DIR is too long for a socket path', async () => {
    const deep = join(dataDir(), 'a'.repeat(60), 'b'.repeat(40));
    mkdirSync(deep, { recursive: true });
    if (process.getuid?.() === 0) for (let d = deep; d.length > tmpdir().length + 1; d = join(d, '..')) chmodSync(d, 0o711);
    const server = await startEmbeddedPostgres(join(deep, 'postgres'));
    expect(decodeURIComponent(server.url)).not.toContain(deep);
    const sql = postgresSql(server.url);
    expect(await sql.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await sql.close();
    await server.stop();
  });
});

describe('the embedded database a gateway opens (no DATABASE_URL)', () => {
  it('is the Postgres server by default', async () => {
    const dir = dataDir();
    const db = await openEmbeddedDatabase(settingsFromEnv({ DATA_DIR: dir }));
    expect(db.sql.kind).toBe('postgres');
    expect(db.description).toBe(`embedded Postgres in ${join(dir, 'postgres')}`);
    await db.sql.close();
  });

  it('is PGlite in the process with EMBEDDED_DATABASE=pglite', async () => {
    const dir = dataDir();
    const db = await openEmbeddedDatabase(settingsFromEnv({ DATA_DIR: dir, EMBEDDED_DATABASE: 'pglite' }));
    expect(db.sql.kind).toBe('pglite');
    expect(existsSync(join(dir, 'postgres'))).toBe(false);
    await db.sql.close();
  });

  it('stays PGlite for a DATA_DIR that already holds a PGlite database, so its data is not left behind', async () => {
    const dir = dataDir();
    const earlier = await openPglite(join(dir, 'pglite'));
    await earlier.exec('CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)');
    await earlier.close();
    const db = await openEmbeddedDatabase(settingsFromEnv({ DATA_DIR: dir }));
    expect(db.sql.kind).toBe('pglite');
    expect(await db.sql.query('SELECT n FROM kept')).toEqual([{ n: 7 }]);
    await db.sql.close();
  });

  it('refuses an unknown EMBEDDED_DATABASE', () => {
    expect(() => settingsFromEnv({ EMBEDDED_DATABASE: 'sqlite' })).toThrow(/EMBEDDED_DATABASE must be "postgres" or "pglite", not "sqlite"/);
  });
});
