import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { inject } from 'vitest';
import { openPglite, postgresSql, type Sql } from '../../src/storage/sql';

export interface TestDatabase {
  readonly sql: Sql;
  readonly label: string;
  /** Another connection pool on the same database (a second gateway instance). */
  another(): Sql;
  drop(): Promise<void>;
}

let template: Blob | undefined;

/** The run's fresh data directory (test/support/pglite-template.ts), read once per test file. */
function pgliteTemplate(): Blob | undefined {
  const path = inject('pgliteTemplate');
  if (path && !template) template = new Blob([readFileSync(path)]);
  return template;
}

/** In-memory PGlite: always available. */
export async function pgliteDatabase(): Promise<TestDatabase> {
  const sql = await openPglite(undefined, { from: pgliteTemplate() });
  return {
    sql,
    label: 'pglite',
    another: () => sql,
    drop: () => sql.close(),
  };
}

/** A fresh schema on the DATABASE_URL server, dropped afterwards. */
export async function postgresDatabase(url: string): Promise<TestDatabase> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const pools: Sql[] = [];
  const open = () => {
    const sql = postgresSql(url, { schema, max: 20 });
    pools.push(sql);
    return sql;
  };
  return {
    sql: open(),
    label: 'postgres',
    another: open,
    async drop() {
      await Promise.all(pools.map((p) => p.close()));
      const cleanup = new pg.Client({ connectionString: url });
      await cleanup.connect();
      await cleanup.query(`DROP SCHEMA ${schema} CASCADE`);
      await cleanup.end();
    },
  };
}

/** The database the suite runs on: Postgres when DATABASE_URL is set, else PGlite. */
export function testDatabase(): Promise<TestDatabase> {
  const url = process.env.DATABASE_URL;
  return url ? postgresDatabase(url) : pgliteDatabase();
}
