/**
 * Snapshots, on every event store adapter reachable here (PGlite always; Postgres with DATABASE_URL;
 * EventStoreDB with EVENTSTORE_URL, its snapshots kept in a SQL database beside it, as the gateway
 * does). A wallet read after a restart reads its latest snapshot and the events after it, and is the
 * wallet the whole stream gives; a snapshot of another version, unreadable, or no longer matching the
 * log is ignored.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { canonicalState as canonical } from '../support/canonical-state';
import { Ledger } from '../../src/commands/ledger';
import { SNAPSHOT_SCHEMA, sqlSnapshotStore } from '../../src/commands/snapshot/store';
import { storeWith, type EventStore } from '../../src/events/store/port';
import { createPostgresEventStore, migrateEvents } from '../../src/events/store/postgres';
import { KeyCipher } from '../../src/secrets/api-key';
import { KEY_VAULT_SCHEMA, KeyVault } from '../../src/secrets/key-vault';
import { pgliteDatabase, postgresDatabase, type TestDatabase } from '../support/storage';

const EVERY = 10;
const cipher = new KeyCipher('cd'.repeat(32));

interface Adapter {
  readonly name: string;
  readonly unreachable: string | null;
  open(): Promise<{ db: TestDatabase; store: EventStore; close(): Promise<void> }>;
}

const adapters: Adapter[] = [
  {
    name: 'PGlite',
    unreachable: null,
    async open() {
      const db = await pgliteDatabase();
      await migrateEvents(db.sql);
      return { db, store: createPostgresEventStore(db.sql), close: () => db.drop() };
    },
  },
  {
    name: 'Postgres',
    unreachable: process.env.DATABASE_URL ? null : 'DATABASE_URL is not set',
    async open() {
      const db = await postgresDatabase(process.env.DATABASE_URL!);
      await migrateEvents(db.sql);
      return { db, store: createPostgresEventStore(db.sql), close: () => db.drop() };
    },
  },
  {
    name: 'EventStoreDB',
    unreachable: process.env.EVENTSTORE_URL ? null : 'EVENTSTORE_URL is not set',
    async open() {
      const { createEventStoreDbStore } = await import('../../src/events/store/eventstoredb');
      const db = await pgliteDatabase();
      const store = createEventStoreDbStore(process.env.EVENTSTORE_URL!);
      return {
        db,
        store,
        async close() {
          await store.close();
          await db.drop();
        },
      };
    },
  },
];


for (const adapter of adapters) {
  describe.skipIf(adapter.unreachable !== null)(`snapshots: ${adapter.name}${adapter.unreachable ? ` (skipped: ${adapter.unreachable})` : ''}`, () => {
    let h: Awaited<ReturnType<Adapter['open']>>;
    let accountId: string;
    let streamEvents: number;
    /** Events the last counting ledger read from the store. */
    let read = 0;

    const ledger = (snapshots: boolean, store: EventStore = h.store) =>
      new Ledger(store, new KeyVault(h.db.sql, cipher), { ...(snapshots ? { snapshots: sqlSnapshotStore(h.db.sql), snapshotEvery: EVERY } : {}) });
    const counting = () =>
      storeWith(h.store, {
        readStream: async (...args) => {
          const events = await h.store.readStream(...args);
          read += events.length;
          return events;
        },
      });
    const snapshotRow = async () =>
      (await h.db.sql.query<{ revision: string; version: string }>('SELECT revision::text AS revision, version FROM stream_snapshots WHERE stream_id = $1', [`wallet-${accountId}`]))[0];

    beforeAll(async () => {
      h = await adapter.open();
      await h.db.sql.exec(KEY_VAULT_SCHEMA);
      await h.db.sql.exec(SNAPSHOT_SCHEMA);
      const writer = ledger(true);
      const opened = await writer.openAccount(`snapshots ${randomUUID()}`);
      if (!opened.ok) throw new Error(opened.error.message);
      accountId = opened.accountId;
      for (let i = 0; i < 37; i++) {
        const holdId = `hold-${i}`;
        const reserved = await writer.reserve(accountId, { holdId, amount: 1_000_000n, keyId: null, purpose: 'chat', ttlSeconds: 300 });
        if (!reserved.ok) throw new Error(reserved.error.message);
        if (i % 5 !== 4) await writer.settle(accountId, holdId, BigInt(1000 * i));
      }
      await writer.idle();
      streamEvents = (await h.store.readStream(`wallet-${accountId}`)).length;
      // Snapshots are written after the appends, not awaited by them: wait on their own pace (a slow
      // machine takes seconds), not a fixed number of polls.
      await vi.waitFor(async () => expect(Number((await snapshotRow())?.revision ?? -1)).toBeGreaterThanOrEqual(streamEvents - EVERY), { timeout: 30_000, interval: 20 });
    });
    afterAll(() => h?.close());

    it('are taken every few events as the stream grows', async () => {
      expect(streamEvents).toBeGreaterThan(60);
      const row = await snapshotRow();
      expect(Number(row!.revision)).toBeGreaterThanOrEqual(streamEvents - 1 - EVERY);
      expect(row!.version).toMatch(/^wallet\.\d+\.[0-9a-f]{16}$/);
    });

    it('a wallet read after a restart reads the snapshot and its tail only, and is the wallet of the whole stream', async () => {
      const whole = await ledger(false).wallet(accountId);
      read = 0;
      const restored = await ledger(true, counting()).wallet(accountId);
      expect(read).toBeLessThanOrEqual(EVERY + 1);
      expect(canonical(restored)).toEqual(canonical(whole));
      expect(restored.held).toBe(whole.held);
      expect(restored.holds.size).toBe(7);
    });

    it('a restored wallet goes on deciding as the log says: closed holds stay remembered, an open one settles', async () => {
      const restarted = ledger(true);
      const restored = await restarted.wallet(accountId);
      expect(restored.closedHolds.current.has('hold-0') || restored.closedHolds.previous.has('hold-0')).toBe(true);
      expect(restored.holds.has('hold-4')).toBe(true);
      const open = await restarted.settle(accountId, 'hold-4', 400n);
      expect(open.ok).toBe(true);
      await restarted.idle();
      expect(canonical(await ledger(false).wallet(accountId))).toEqual(canonical(await ledger(true).wallet(accountId)));
    });

    it('ignores a snapshot of another version, an unreadable one, and one whose event is not at its revision', async () => {
      const whole = canonical(await ledger(false).wallet(accountId));
      const length = (await h.store.readStream(`wallet-${accountId}`)).length;
      for (const spoil of [
        `UPDATE stream_snapshots SET version = 'wallet.0.0000000000000000' WHERE stream_id = $1`,
        `UPDATE stream_snapshots SET state = '{not json' WHERE stream_id = $1`,
        `UPDATE stream_snapshots SET event_id = '${randomUUID()}' WHERE stream_id = $1`,
      ]) {
        await h.db.sql.query(spoil, [`wallet-${accountId}`]);
        read = 0;
        const loaded = await ledger(true, counting()).wallet(accountId);
        expect(canonical(loaded)).toEqual(whole);
        // The whole stream was read (after the snapshot's own tail read, when it got that far).
        expect(read).toBeGreaterThanOrEqual(length);
        // And the full read took a new, good snapshot (written in the background).
        await vi.waitFor(
          async () => {
            read = 0;
            await ledger(true, counting()).wallet(accountId);
            expect(read).toBeLessThanOrEqual(EVERY + 1);
          },
          { timeout: 30_000, interval: 20 },
        );
      }
      read = 0;
      expect(canonical(await ledger(true, counting()).wallet(accountId))).toEqual(whole);
      expect(read).toBeLessThanOrEqual(EVERY + 1);
    });
  });
}
