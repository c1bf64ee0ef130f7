import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SNAPSHOT_SCHEMA } from '../commands/snapshot/store';
import { checkedStore } from '../events/store/checked';
import { createPostgresEventStore, migrateEvents } from '../events/store/postgres';
import type { EventStore } from '../events/store/port';
import { KEY_VAULT_SCHEMA } from '../secrets/key-vault';
import { acquireDataDirLock } from '../storage/data-dir-lock';
import { openPglite, postgresSql, type Sql } from '../storage/sql';
import type { Settings } from './settings';

// The storage a gateway or a CLI command opens: the SQL database and the event store chosen by the settings.

export interface Storage {
  readonly sql: Sql;
  readonly store: EventStore;
  close(): Promise<void>;
}

/** Projections and the key vault in Postgres (DATABASE_URL) or PGlite under DATA_DIR;
 * events in EventStoreDB when EVENTSTORE_URL is set, else in the same database. */
export async function openStorage(settings: Settings, sqlOverride?: Sql): Promise<Storage> {
  let release = () => {};
  let sql: Sql;
  if (sqlOverride) sql = sqlOverride;
  else if (settings.databaseUrl) sql = postgresSql(settings.databaseUrl);
  else {
    mkdirSync(settings.dataDir, { recursive: true });
    release = acquireDataDirLock(settings.dataDir);
    sql = await openPglite(join(settings.dataDir, 'pglite'), { sharedBuffersMb: settings.pgliteSharedBuffersMb });
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
    async close() {
      await store.close();
      if (!sqlOverride) await sql.close();
      release();
    },
  };
}
