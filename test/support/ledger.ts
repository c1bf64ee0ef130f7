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

/** A new account (with its grant) through `ledger`; its id. */
export async function openAccount(ledger: Ledger, name: string): Promise<string> {
  const opened = await ledger.openAccount(name);
  if (!opened.ok) throw new Error(opened.error.message);
  return opened.accountId;
}

/** A store that does what `store` does, but for the methods given (a counter, a gate). */
export { storeWith } from '../../src/events/store/port';
