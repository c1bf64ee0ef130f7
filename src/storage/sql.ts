import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFromStdin } from 'pg-copy-streams';
import type { PGlite } from '@electric-sql/pglite';
import { DEFAULT_PGLITE_SHARED_BUFFERS_MB } from './pglite-settings';

/** The little of a SQL connection that the stores and projections need; PGlite and
 * a `pg` pool both provide it, so the same SQL runs embedded and on Postgres. */
export interface SqlQuery {
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Loads rows into `table` with COPY (text format, copyText.ts): `rows` is one line per row, each
   * value in `columns` order. Several times cheaper for the database than the same rows sent as a
   * statement's parameters; a rebuild loads its large tables this way. */
  copyFrom(table: string, columns: readonly string[], rows: string): Promise<void>;
}

export interface TransactionOptions {
  /** false: the commit returns without waiting for the WAL flush (for writes that can be made
   * again from what is durable, e.g. a projection's batch with its checkpoint). Postgres only. */
  readonly durable?: boolean;
}

export interface Sql extends SqlQuery {
  readonly kind: 'pglite' | 'postgres';
  transaction<T>(fn: (tx: SqlQuery) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Runs several statements without parameters (schema changes). */
  exec(text: string): Promise<void>;
  /**
   * Calls `listener` whenever what this process read or wrote may no longer be what the database
   * holds: a connection failed, or the server is not the one it was (a restart, a crash, a
   * failover), which may have lost the commits that did not wait for the WAL flush. Whatever is
   * cached from the database must then be dropped. The listener is called before any result from
   * the new server is handed out. Returns the function that removes the listener.
   */
  onReset(listener: () => void): () => void;
  close(): Promise<void>;
}

/** Listeners of Sql.onReset. */
class Resets {
  private readonly listeners = new Set<() => void>();

  add(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  fire() {
    for (const listener of this.listeners) listener();
  }
}

const copyStatement = (table: string, columns: readonly string[], source: string) => `COPY ${table} (${columns.join(', ')}) FROM ${source}`;

export function pgliteSql(db: PGlite): Sql {
  // PGlite takes the rows of a COPY as a blob, in place of a file named /dev/blob.
  const copyFrom = async (on: Pick<PGlite, 'query'>, table: string, columns: readonly string[], rows: string) => {
    if (rows.length) await on.query(copyStatement(table, columns, "'/dev/blob'"), [], { blob: new Blob([rows]) });
  };
  return {
    kind: 'pglite',
    // In this process: a crash of the database is a crash of the process, caches and all.
    onReset: () => () => {},
    async query<Row>(text: string, params: readonly unknown[] = []) {
      const result = await db.query<Row>(text, params as unknown[]);
      return result.rows;
    },
    copyFrom: (table, columns, rows) => copyFrom(db, table, columns, rows),
    transaction<T>(fn: (tx: SqlQuery) => Promise<T>) {
      return db.transaction((tx) =>
        fn({
          async query<Row>(text: string, params: readonly unknown[] = []) {
            return (await tx.query<Row>(text, params as unknown[])).rows;
          },
          copyFrom: (table, columns, rows) => copyFrom(tx, table, columns, rows),
        }),
      );
    },
    async exec(text: string) {
      await db.exec(text);
    },
    close: () => db.close(),
  };
}

export interface PgliteOptions {
  /** The buffer pool (PGLITE_SHARED_BUFFERS_MB). */
  readonly sharedBuffersMb?: number;
  /** A data directory to start from (a `dumpDataDir` tarball) instead of running initdb: the tests'
   * template, which saves each in-memory database the seconds initdb takes. */
  readonly from?: Blob;
}

export async function openPglite(dataDir?: string, options: PgliteOptions = {}): Promise<Sql> {
  // Loaded here, not at module load: a gateway on DATABASE_URL never needs PGlite.
  const { PGlite } = await import('@electric-sql/pglite');
  // One options object: PGlite reads a second argument only when the first is a string.
  const db = new PGlite({
    ...(dataDir === undefined ? {} : { dataDir }),
    postgresqlconf: [`shared_buffers=${options.sharedBuffersMb ?? DEFAULT_PGLITE_SHARED_BUFFERS_MB}MB`],
    ...(options.from ? { loadDataDir: options.from } : {}),
  });
  await db.waitReady;
  return pgliteSql(db);
}

export interface PostgresOptions {
  /** Every connection uses this schema; tests get one schema each. */
  readonly schema?: string;
  readonly max?: number;
  /** How long an unused connection stays open (pg's default, 10 s, when unset). */
  readonly idleTimeoutMs?: number;
}

/** A server that does not answer (a failover in progress, a network cut) fails a request after this
 * long instead of holding it until the operating system gives up on the connection (minutes). */
const CONNECT_TIMEOUT_MS = 10_000;

/** Distinct statement texts given a name; texts built with varying literals beyond this run unnamed. */
const MAX_NAMED_STATEMENTS = 500;

/**
 * Names for statement texts, so that each connection parses and plans a statement once and then
 * only binds and executes it (for the event append that is a third of Postgres' CPU per call).
 * A text gets its name the second time it is seen, so one-off texts (an operator's query) never
 * take a prepared-statement slot in the server.
 */
export class StatementNames {
  private readonly names = new Map<string, string | null>();
  private named = 0;

  constructor(private readonly limit = MAX_NAMED_STATEMENTS) {}

  query(text: string, params: readonly unknown[]): pg.QueryConfig {
    // Without parameters `pg` uses the simple protocol, which also takes several statements at once.
    if (params.length === 0) return { text };
    const name = this.names.get(text);
    if (name) return { name, text, values: params as unknown[] };
    if (name === null) {
      const fresh = `s${this.named++}`;
      this.names.set(text, fresh);
      return { name: fresh, text, values: params as unknown[] };
    }
    if (this.names.size < this.limit) this.names.set(text, null);
    return { text, values: params as unknown[] };
  }
}

/** The server's identity: a restarted server, or another one after a failover, has another start time. */
const SERVER_STARTED = 'SELECT pg_postmaster_start_time()::text AS started';

export function postgresSql(connectionString: string, options: PostgresOptions = {}): Sql {
  const resets = new Resets();
  let server: string | null = null;
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMillis: options.idleTimeoutMs } : {}),
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    // Run on each new connection before the pool hands it out: a restarted server is known (and
    // the caches dropped) before any of its answers is used.
    verify: (client, done) => {
      client.query<{ started: string }>(SERVER_STARTED).then(
        ({ rows }) => {
          const started = rows[0]!.started;
          if (server !== null && server !== started) resets.fire();
          server = started;
          done();
        },
        (error: Error) => done(error),
      );
    },
  });
  // Every client, idle or checked out, gets a listener for its 'error' event: a server that goes
  // away (restart, crash, failover, a network cut) fails the client's queries, and the event
  // itself, unheard, would end the process. The pool drops the broken client; the next query
  // opens a new connection.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => resets.fire()));
  const statements = new StatementNames();
  const copyFrom = async (client: pg.PoolClient, table: string, columns: readonly string[], rows: string) => {
    if (rows.length) await pipeline(Readable.from([rows]), client.query(copyFromStdin(copyStatement(table, columns, 'STDIN'))));
  };
  return {
    kind: 'postgres',
    async query<Row>(text: string, params: readonly unknown[] = []) {
      const result = await pool.query(statements.query(text, params));
      return result.rows as Row[];
    },
    async copyFrom(table, columns, rows) {
      const client = await pool.connect();
      let broken: unknown = null;
      try {
        await copyFrom(client, table, columns, rows);
      } catch (error) {
        broken = error;
        throw error;
      } finally {
        client.release(broken ? (broken as Error) : undefined);
      }
    },
    async transaction<T>(fn: (tx: SqlQuery) => Promise<T>, options: TransactionOptions = {}) {
      const client = await pool.connect();
      // A client that failed (or whose transaction could not be ended) is not given back to the pool.
      let broken: unknown = null;
      try {
        // One round trip either way (the simple protocol takes both statements at once).
        await client.query(options.durable === false ? 'BEGIN; SET LOCAL synchronous_commit TO off' : 'BEGIN');
        const value = await fn({
          async query<Row>(text: string, params: readonly unknown[] = []) {
            return (await client.query(statements.query(text, params))).rows as Row[];
          },
          copyFrom: (table, columns, rows) => copyFrom(client, table, columns, rows),
        });
        await client.query('COMMIT');
        return value;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
        throw error;
      } finally {
        client.release(broken ? (broken as Error) : undefined);
      }
    },
    async exec(text: string) {
      await pool.query(text);
    },
    onReset: (listener) => resets.add(listener),
    close: () => pool.end(),
  };
}

/** Postgres reports a unique violation as SQLSTATE 23505, with the constraint's name. */
export function uniqueViolation(error: unknown): string | null {
  const e = error as { code?: string; constraint?: string; message?: string } | null;
  if (e?.code !== '23505') return null;
  return e.constraint ?? e.message ?? 'unique';
}
