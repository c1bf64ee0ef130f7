import { afterAll, beforeAll, expect } from 'vitest';
import { keyStream, unmeasuredCall, walletStream, type CallRecord } from '../../src/events/catalog';
import type { RecordedEvent } from '../../src/events/store/port';
import type { Projection } from '../../src/projections/projection';
import { ProjectionRunner } from '../../src/projections/runner/runner';
import type { Sql } from '../../src/storage/sql';
import { testDatabase, type TestDatabase } from '../support/storage';
import { memoryStore } from './wallet-log';

/**
 * The projection spec helper: given events, a projection's tables as its runner leaves them, read through
 * its queries.ts. The spec of a new projection copies test/projections/keys-queries.int.spec.ts:
 *
 *   const spec = projectionSpec([keysProjection]);   // once per file: the database and its teardown
 *   it('…', async () => {
 *     await spec.given([issued('key_a', …)]);          // a fresh log and empty tables, applied
 *     expect(await accountKeys(spec.sql, 'acct_1')).toEqual([…]);
 *     await spec.replayGivesSameRows();                // a rebuild from the log writes the same rows
 *   });
 *
 * The database is PGlite in this process, or a schema of its own on DATABASE_URL's Postgres when that is set.
 */

/** One event as a test writes it: its stream, type and data (as its catalogue schema reads it), and the
 * actor its metadata names (the audit trail reads it). */
export interface GivenEvent {
  readonly stream: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
  readonly actor?: string;
}

export interface ProjectionSpec {
  /** The database the projections write and the queries read. */
  readonly sql: Sql;
  /**
   * Starts from nothing (every table the projections' schemas create dropped, and the runner's), records
   * the events as one log (each stream's revisions from 0, in the order given) and has a runner apply it.
   * Fails when a projection parked an event (one it could not apply): a spec's events must all apply.
   * Returns the events as recorded: their `id` is what rows keyed by event name (a call's row, an audit entry).
   */
  given(events: readonly GivenEvent[]): Promise<RecordedEvent[]>;
  /** Every row of every table the projections' schemas create, as JSON, each table's rows sorted. */
  snapshot(): Promise<Record<string, string[]>>;
  /** Rebuilds the projections from the log (`gateway projections rebuild`) and expects the same rows. */
  replayGivesSameRows(): Promise<void>;
}

const bigintAsText = (_key: string, value: unknown) => (typeof value === 'bigint' ? String(value) : value);

const RUNNER_TABLES = ['projection_checkpoints', 'projection_stream_revisions', 'projection_parked_events'];

/** Every table a schema creates (a projection's `tables` leave out what a rebuild keeps, e.g. `key_activity`). */
const createdTables = (schema: string) => [...schema.matchAll(/CREATE TABLE IF NOT EXISTS (\w+)/g)].map((m) => m[1]!);

/** A spec's projections over one database for the file: call at the top of a describe block or file. */
export function projectionSpec(projections: readonly Projection[]): ProjectionSpec {
  let db: TestDatabase | undefined;
  let runner: ProjectionRunner | undefined;
  const tables = [...new Set(projections.flatMap((p) => createdTables(p.schema)))];
  const database = () => {
    if (!db) throw new Error('projectionSpec: its database opens in beforeAll; use it inside a test');
    return db;
  };

  beforeAll(async () => {
    db = await testDatabase();
  });
  afterAll(() => db?.drop());

  const snapshot = async () => {
    const { sql } = database();
    const out: Record<string, string[]> = {};
    for (const table of tables) {
      const rows = await sql.query(`SELECT * FROM ${table}`);
      out[table] = rows.map((r) => JSON.stringify(r, bigintAsText)).sort();
    }
    return out;
  };

  return {
    get sql() {
      return database().sql;
    },
    async given(events) {
      const { sql } = database();
      await sql.exec(`DROP TABLE IF EXISTS ${[...RUNNER_TABLES, ...tables].join(', ')}`);
      const store = memoryStore();
      const revisions = new Map<string, bigint>();
      store.push(
        events.map((e, n) => {
          const revision = revisions.get(e.stream) ?? 0n;
          revisions.set(e.stream, revision + 1n);
          const at = typeof e.data.at === 'number' ? e.data.at : 1_700_000_000 + n;
          return { id: '', streamId: e.stream, revision, position: { commit: 0n, prepare: 0n }, type: e.type, data: e.data, metadata: e.actor ? { actor: e.actor } : {}, createdAt: new Date(at * 1000) };
        }),
      );
      // Busy or not as fixed here: what a batch writes must not depend on the test process's load.
      runner = new ProjectionRunner(sql, store, projections, { busy: () => false });
      await runner.migrate();
      await runner.catchUpToHead();
      const parked = await runner.parkedEvents();
      if (parked.length) throw new Error(`projectionSpec: events were parked, not applied: ${JSON.stringify(parked, bigintAsText)}`);
      return store.events;
    },
    snapshot,
    async replayGivesSameRows() {
      if (!runner) throw new Error('projectionSpec: given() first');
      const before = await snapshot();
      await runner.rebuild(projections.map((p) => p.name));
      expect(await snapshot()).toEqual(before);
    },
  };
}

/** Events of the wallet and key streams that many read models follow, with what a spec does not care
 * about filled in. Amounts are nano-USD. */
export const wallet = {
  opened: (accountId: string, at: number): GivenEvent => ({ stream: walletStream(accountId), type: 'AccountOpened', data: { account_id: accountId, name: `name of ${accountId}`, at } }),
  granted: (accountId: string, amount: bigint, at: number): GivenEvent => ({
    stream: walletStream(accountId),
    type: 'CreditGranted',
    data: { grant_id: `grant-${at}`, amount, reason: 'signup', at },
  }),
  toppedUp: (accountId: string, amount: bigint, reference: string, at: number): GivenEvent => ({
    stream: walletStream(accountId),
    type: 'WalletToppedUp',
    data: { topup_id: `topup-${at}`, amount, reference, at },
  }),
  reserved: (accountId: string, holdId: string, amount: bigint, keyId: string | null, at: number): GivenEvent => ({
    stream: walletStream(accountId),
    type: 'FundsReserved',
    data: { hold_id: holdId, amount, key_id: keyId, purpose: 'chat', expires_at: at + 300, at },
  }),
  /** A hold captured in part (the rest released), with its call's row when `call` is given. */
  settled: (accountId: string, holdId: string, hold: bigint, captured: bigint, at: number, call?: CallRecord): GivenEvent => ({
    stream: walletStream(accountId),
    type: 'HoldSettled',
    data: { hold_id: holdId, hold_amount: hold, captured, released: hold - captured, ...(call ? { call } : {}), at },
  }),
  released: (accountId: string, holdId: string, amount: bigint, at: number, call?: CallRecord): GivenEvent => ({
    stream: walletStream(accountId),
    type: 'HoldReleased',
    data: { hold_id: holdId, amount, reason: 'upstream failed', ...(call ? { call } : {}), at },
  }),
};

/** A call record of `model` by `keyId`, nothing measured. */
export const call = (requestId: string, keyId: string | null, model: string, status: CallRecord['status'], at: number): CallRecord =>
  unmeasuredCall({ request_id: requestId, key_id: keyId, model, endpoint: '/v1/chat/completions', status, submitted_at: at });

/** A key's issue: `n` makes its prefix and (fake) hash unique. */
export const keyIssued = (keyId: string, accountId: string, n: number, at: number, fields: { name?: string; agent_id?: string; spend_cap?: bigint | null } = {}): GivenEvent => ({
  stream: keyStream(keyId),
  type: 'KeyIssued',
  data: {
    key_id: keyId,
    account_id: accountId,
    name: fields.name ?? `key ${keyId}`,
    prefix: `sk-${String(n).padStart(4, '0')}`,
    hash: keyHash(n),
    allowed_models: null,
    expires_at: null,
    enabled: true,
    spend_cap: fields.spend_cap ?? null,
    revealable: true,
    at,
    ...(fields.agent_id ? { agent_id: fields.agent_id } : {}),
  },
});

/** The (fake) SHA-256 hash of key number `n`. */
export const keyHash = (n: number) => n.toString(16).padStart(64, '0');
