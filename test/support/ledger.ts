import { Ledger, type LedgerOptions } from '../../src/commands/ledger';
import { createPostgresEventStore, migrateEvents } from '../../src/events/store/postgres';
import type { EventStore } from '../../src/events/store/port';
import { KeyCipher } from '../../src/secrets/api-key';
import { KEY_VAULT_SCHEMA, KeyVault } from '../../src/secrets/key-vault';
import type { Sql } from '../../src/storage/sql';
import { testDatabase, type TestDatabase } from './storage';

/** A test database with the events table and the key vault, for ledgers and command handlers. */
export interface LedgerTestbed {
  readonly db: TestDatabase;
  /** An events-table store on the database's first pool. */
  readonly store: EventStore;
  /** A ledger at a fixed clock, over `store` (by default a store of its own on `sql`) and `sql`
   * (by default the database's first pool; `db.another()` is a second gateway instance). */
  ledger(options?: { store?: EventStore; sql?: Sql } & LedgerOptions): Ledger;
}

const cipher = new KeyCipher('cd'.repeat(32));

export async function ledgerTestbed(): Promise<LedgerTestbed> {
  const db = await testDatabase();
  await migrateEvents(db.sql);
  await db.sql.exec(KEY_VAULT_SCHEMA);
  return {
    db,
    store: createPostgresEventStore(db.sql),
    ledger({ store, sql = db.sql, ...options } = {}) {
      return new Ledger(store ?? createPostgresEventStore(sql), new KeyVault(sql, cipher), { now: () => 1_700_000_000, ...options });
    },
  };
}

/** A store that does what `store` does, but for the methods given (a counter, a gate). */
export function storeWith(store: EventStore, overrides: Partial<EventStore>): EventStore {
  return {
    engine: store.engine,
    append: (...args) => store.append(...args),
    readStream: (...args) => store.readStream(...args),
    readAll: (...args) => store.readAll(...args),
    headPosition: () => store.headPosition(),
    follow: (...args) => store.follow(...args),
    ...(store.onReset ? { onReset: (listener: () => void) => store.onReset!(listener) } : {}),
    close: () => store.close(),
    ...overrides,
  };
}
