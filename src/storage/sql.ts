import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';

/** The little of a SQL connection that the stores and projections need; PGlite and
 * a `pg` pool both provide it, so the same SQL runs embedded and on Postgres. */
export interface SqlQuery {
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>;
}

export interface Sql extends SqlQuery {
  readonly kind: 'pglite' | 'postgres';
  transaction<T>(fn: (tx: SqlQuery) => Promise<T>): Promise<T>;
  /** Runs several statements without parameters (schema changes). */
  exec(text: string): Promise<void>;
  close(): Promise<void>;
}

export function pgliteSql(db: PGlite): Sql {
  return {
    kind: 'pglite',
    async query<Row>(text: string, params: readonly unknown[] = []) {
      const result = await db.query<Row>(text, params as unknown[]);
      return result.rows;
    },
    transaction<T>(fn: (tx: SqlQuery) => Promise<T>) {
      return db.transaction((tx) =>
        fn({
          async query<Row>(text: string, params: readonly unknown[] = []) {
            return (await tx.query<Row>(text, params as unknown[])).rows;
          },
        }),
      );
    },
    async exec(text: string) {
      await db.exec(text);
    },
    close: () => db.close(),
  };
}

export async function openPglite(dataDir?: string): Promise<Sql> {
  // Loaded here, not at module load: a gateway on DATABASE_URL never needs PGlite.
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite(dataDir);
  await db.waitReady;
  return pgliteSql(db);
}

export interface PostgresOptions {
  /** Every connection uses this schema; tests get one schema each. */
  readonly schema?: string;
  readonly max?: number;
}

export function postgresSql(connectionString: string, options: PostgresOptions = {}): Sql {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // An idle client that errors (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return {
    kind: 'postgres',
    async query<Row>(text: string, params: readonly unknown[] = []) {
      const result = await pool.query(text, params as unknown[]);
      return result.rows as Row[];
    },
    async transaction<T>(fn: (tx: SqlQuery) => Promise<T>) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const value = await fn({
          async query<Row>(text: string, params: readonly unknown[] = []) {
            return (await client.query(text, params as unknown[])).rows as Row[];
          },
        });
        await client.query('COMMIT');
        return value;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async exec(text: string) {
      await pool.query(text);
    },
    close: () => pool.end(),
  };
}

/** Postgres reports a unique violation as SQLSTATE 23505, with the constraint's name. */
export function uniqueViolation(error: unknown): string | null {
  const e = error as { code?: string; constraint?: string; message?: string } | null;
  if (e?.code !== '23505') return null;
  return e.constraint ?? e.message ?? 'unique';
}
