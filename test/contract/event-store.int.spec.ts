/**
 * The event store contract: one suite, run against every adapter that is reachable here.
 * - PGlite (in memory): always.
 * - Postgres: when DATABASE_URL is set (a fresh schema, dropped afterwards).
 * - EventStoreDB: when EVENTSTORE_URL is set. Its log is shared with whatever else uses
 *   the server, so every test uses stream names unique to this run and reads the global
 *   log only after a marker event it appended itself, filtered by its own stream prefix.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConcurrencyError,
  DuplicateEventConflictError,
  START,
  comparePositions,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type RecordedEvent,
} from '../../src/events/store/port';
import { createPostgresEventStore, migrateEvents } from '../../src/events/store/postgres';
import { pgliteDatabase, postgresDatabase, type TestDatabase } from '../support/storage';

// ---------------------------------------------------------------------------------------
// Harnesses: one per engine.

interface Harness {
  readonly store: EventStore;
  /** Another store on its own connections (its own pool on Postgres), so writers really overlap. */
  writer(): EventStore;
  /** Postgres only: a raw client on the same schema, outside the adapter. */
  raw?(): Promise<pg.Client>;
  close(): Promise<void>;
}

interface Adapter {
  /** Why the adapter cannot run here, or null when it can. */
  readonly unreachable: string | null;
  /** The global log holds only this harness's events (a fresh database), so it can be read from START. */
  readonly ownLog: boolean;
  /** Raw connections are available (Postgres): the out-of-order commit tests run. */
  readonly rawConnections: boolean;
  create(): Promise<Harness>;
}

function sqlHarness(db: TestDatabase, url?: string): Promise<Harness> {
  return (async () => {
    await migrateEvents(db.sql);
    const store = createPostgresEventStore(db.sql);
    const writers: EventStore[] = [];
    const clients: pg.Client[] = [];
    let raw: (() => Promise<pg.Client>) | undefined;
    if (url !== undefined) {
      const [row] = await db.sql.query<{ schema: string }>('SELECT current_schema() AS schema');
      const schema = row!.schema;
      raw = async () => {
        const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
        client.on('error', () => {});
        await client.connect();
        clients.push(client);
        return client;
      };
    }
    return {
      store,
      writer() {
        const w = createPostgresEventStore(db.another());
        writers.push(w);
        return w;
      },
      ...(raw ? { raw } : {}),
      async close() {
        await Promise.all(clients.map((c) => c.end().catch(() => {})));
        await Promise.all(writers.map((w) => w.close()));
        await store.close();
        await db.drop();
      },
    };
  })();
}

const DATABASE_URL = process.env.DATABASE_URL || undefined;
const EVENTSTORE_URL = process.env.EVENTSTORE_URL || undefined;

const pglite: Adapter = {
  unreachable: null,
  ownLog: true,
  rawConnections: false,
  create: async () => sqlHarness(await pgliteDatabase()),
};

const postgres: Adapter = {
  unreachable: DATABASE_URL ? null : 'DATABASE_URL is not set',
  ownLog: true,
  rawConnections: true,
  create: async () => sqlHarness(await postgresDatabase(DATABASE_URL!), DATABASE_URL!),
};

const eventStoreDb: Adapter = {
  unreachable: EVENTSTORE_URL ? null : 'EVENTSTORE_URL is not set',
  ownLog: false,
  rawConnections: false,
  async create() {
    // Imported lazily: the gRPC client is only loaded when the server is there.
    const { createEventStoreDbStore } = await import('../../src/events/store/eventstoredb');
    const store = createEventStoreDbStore(EVENTSTORE_URL!);
    const writers: EventStore[] = [];
    return {
      store,
      writer() {
        const w = createEventStoreDbStore(EVENTSTORE_URL!);
        writers.push(w);
        return w;
      },
      async close() {
        await Promise.all(writers.map((w) => w.close()));
        await store.close();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------
// Helpers.

const RUN = randomUUID().slice(0, 8);
let prefixes = 0;
/** A stream-name prefix unique to one test of this run (the EventStoreDB log is shared). */
function uniquePrefix(): string {
  return `contract_${RUN}_${++prefixes}_`;
}

function ev(type = 'Tested', data: unknown = {}, metadata?: Record<string, unknown>): NewEvent {
  return { id: randomUUID(), type, data, ...(metadata ? { metadata } : {}) };
}

function ids(events: readonly { id: string }[]): string[] {
  return events.map((e) => e.id.toLowerCase());
}

function revisions(events: readonly RecordedEvent[]): bigint[] {
  return events.map((e) => e.revision);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

async function expectConcurrencyError(
  promise: Promise<unknown>,
  streamId: string,
  expected: ExpectedRevision,
  actual: bigint | 'no_stream',
): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(ConcurrencyError);
  const e = error as ConcurrencyError;
  expect(e.code).toBe('wrong_expected_revision');
  expect(e.streamId).toBe(streamId);
  expect(e.expected).toBe(expected);
  expect(e.actual).toBe(actual);
}

async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every event after `after` that readAll shows now, paging until the visible end of the log. */
async function readAllFrom(store: EventStore, after: Position, maxCount = 250): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  let cursor = after;
  for (;;) {
    const page = await store.readAll({ after: cursor, maxCount });
    if (page.length === 0) return out;
    out.push(...page);
    cursor = page[page.length - 1]!.position;
  }
}

/** The events of `prefix`'s streams after `after`, once at least `count` of them are visible
 * (another client's transaction in flight on the same Postgres server may hold them back briefly). */
async function readOurs(store: EventStore, after: Position, prefix: string, count: number): Promise<RecordedEvent[]> {
  let ours: RecordedEvent[] = [];
  await waitUntil(async () => {
    ours = (await readAllFrom(store, after)).filter((e) => e.streamId.startsWith(prefix));
    return ours.length >= count;
  }, `${count} events of ${prefix} in readAll`);
  return ours;
}

/** A position at the current end of the log: the position of a marker event appended now. */
async function logEnd(store: EventStore): Promise<Position> {
  const marker = await store.append(`${uniquePrefix()}marker`, [ev('Marker')], 'no_stream');
  return marker.position;
}

function expectStrictlyIncreasing(events: readonly RecordedEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    const previous = events[i - 1]!.position;
    const current = events[i]!.position;
    if (comparePositions(previous, current) >= 0) {
      throw new Error(
        `positions not strictly increasing at ${i}: ` +
          `(${previous.commit}, ${previous.prepare}) then (${current.commit}, ${current.prepare})`,
      );
    }
  }
}

/** Each stream's revisions, in the order given, are 0, 1, 2, ... with no gap and no repeat. */
function expectContiguousPerStream(events: readonly RecordedEvent[]): Map<string, bigint> {
  const last = new Map<string, bigint>();
  for (const event of events) {
    const previous = last.get(event.streamId) ?? -1n;
    if (event.revision !== previous + 1n) {
      throw new Error(`stream ${event.streamId}: revision ${event.revision} after ${previous}`);
    }
    last.set(event.streamId, event.revision);
  }
  return last;
}

interface Follower {
  readonly seen: RecordedEvent[];
  /** True once the follow loop has returned (or thrown). */
  readonly ended: () => boolean;
  /** The number of events seen so far; rethrows the follow loop's failure, if any. */
  count(): number;
  /** Aborts the signal and waits for the loop to end (throws if it does not within 5 s). */
  stop(): Promise<void>;
}

function follow(store: EventStore, after: Position, prefix: string): Follower {
  const controller = new AbortController();
  const seen: RecordedEvent[] = [];
  let ended = false;
  let failure: unknown;
  const done = (async () => {
    try {
      for await (const event of store.follow({ after, signal: controller.signal })) {
        if (event.streamId.startsWith(prefix)) seen.push(event);
      }
    } catch (error) {
      failure = error ?? new Error('follow() failed');
      throw error;
    } finally {
      ended = true;
    }
  })();
  done.catch(() => {});
  return {
    seen,
    ended: () => ended,
    count() {
      if (failure !== undefined) throw failure;
      return seen.length;
    },
    async stop() {
      controller.abort();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('follow() did not stop within 5 s of the abort')), 5_000);
      });
      try {
        await Promise.race([done, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------
// The contract.

export function eventStoreContract(name: string, adapter: Adapter): void {
  const title = adapter.unreachable ? `${name} (skipped: ${adapter.unreachable})` : name;

  describe.skipIf(adapter.unreachable !== null)(`event store contract: ${title}`, () => {
    let h: Harness;
    let store: EventStore;

    beforeAll(async () => {
      h = await adapter.create();
      store = h.store;
    });

    afterAll(async () => {
      await h?.close();
    });

    describe('append and expected revisions', () => {
      it("'no_stream' creates a stream; a second 'no_stream' is a ConcurrencyError with the actual revision", async () => {
        const s = `${uniquePrefix()}s`;
        const first = await store.append(s, [ev(), ev()], 'no_stream');
        expect(first.duplicate).toBe(false);
        expect(first.nextRevision).toBe(1n);
        expect(comparePositions(first.position, START)).toBeGreaterThan(0);

        await expectConcurrencyError(store.append(s, [ev()], 'no_stream'), s, 'no_stream', 1n);
        expect(revisions(await store.readStream(s))).toEqual([0n, 1n]);
      });

      it('an exact expected revision appends; a lower or higher one is a ConcurrencyError and leaves no gap', async () => {
        const s = `${uniquePrefix()}s`;
        expect((await store.append(s, [ev(), ev()], 'no_stream')).nextRevision).toBe(1n);
        const second = await store.append(s, [ev()], 1n);
        expect(second).toMatchObject({ nextRevision: 2n, duplicate: false });

        await expectConcurrencyError(store.append(s, [ev()], 1n), s, 1n, 2n); // too low (stale)
        await expectConcurrencyError(store.append(s, [ev()], 0n), s, 0n, 2n);
        await expectConcurrencyError(store.append(s, [ev()], 3n), s, 3n, 2n); // too high by one
        await expectConcurrencyError(store.append(s, [ev(), ev()], 10n), s, 10n, 2n);
        expect(revisions(await store.readStream(s))).toEqual([0n, 1n, 2n]);

        const third = await store.append(s, [ev()], 2n);
        expect(third.nextRevision).toBe(3n);
        expect(comparePositions(third.position, second.position)).toBeGreaterThan(0);
        expect(revisions(await store.readStream(s))).toEqual([0n, 1n, 2n, 3n]);
      });

      it('an exact expected revision on a stream that does not exist is a ConcurrencyError (no_stream)', async () => {
        const s = `${uniquePrefix()}s`;
        await expectConcurrencyError(store.append(s, [ev()], 0n), s, 0n, 'no_stream');
        await expectConcurrencyError(store.append(s, [ev()], 4n), s, 4n, 'no_stream');
        expect(await store.readStream(s)).toEqual([]);
      });

      it("'any' creates a stream and appends at its end", async () => {
        const s = `${uniquePrefix()}s`;
        expect((await store.append(s, [ev()], 'any')).nextRevision).toBe(0n);
        expect((await store.append(s, [ev(), ev()], 'any')).nextRevision).toBe(2n);
        expect((await store.append(s, [ev()], 2n)).nextRevision).toBe(3n);
        expect((await store.append(s, [ev()], 'any')).nextRevision).toBe(4n);
        expect(revisions(await store.readStream(s))).toEqual([0n, 1n, 2n, 3n, 4n]);
      });

      it('text the store cannot hold as it is (U+0000, an unpaired surrogate) is kept with U+FFFD in its place; the append does not fail', async () => {
        const s = `${uniquePrefix()}s`;
        const data = { model: 'bad\ud800model', message: 'nul\u0000here', pair: 'emoji \ud83d\ude00 kept', ['key\udc00']: 'tail\udbff' };
        await store.append(s, [ev('Tested', data, { note: 'x\u0000' })], 'no_stream');
        const [read] = await store.readStream(s);
        expect(read!.data).toEqual({ model: 'bad\ufffdmodel', message: 'nul\ufffdhere', pair: 'emoji \ud83d\ude00 kept', ['key\ufffd']: 'tail\ufffd' });
        expect(read!.metadata).toMatchObject({ note: 'x\ufffd' });
      });

      it('an append without events is refused', async () => {
        const s = `${uniquePrefix()}s`;
        await expect(store.append(s, [], 'any')).rejects.toThrow();
        expect(await store.readStream(s)).toEqual([]);
      });
    });

    describe('idempotent appends by event id', () => {
      it('re-appending the same ids with the same expected revision is a duplicate that writes nothing', async () => {
        const s = `${uniquePrefix()}s`;
        const batch1 = [ev('One'), ev('Two')];
        const first = await store.append(s, batch1, 'no_stream');

        const again = await store.append(s, batch1, 'no_stream');
        expect(again.duplicate).toBe(true);
        expect(again.nextRevision).toBe(first.nextRevision);
        expect(comparePositions(again.position, first.position)).toBe(0);

        const batch2 = [ev('Three')];
        const second = await store.append(s, batch2, 1n);
        expect(second).toMatchObject({ nextRevision: 2n, duplicate: false });
        const retried = await store.append(s, batch2, 1n);
        expect(retried.duplicate).toBe(true);
        expect(retried.nextRevision).toBe(2n);
        expect(comparePositions(retried.position, second.position)).toBe(0);

        // A retry with 'any' is recognised too.
        const viaAny = await store.append(s, batch2, 'any');
        expect(viaAny.duplicate).toBe(true);
        expect(viaAny.nextRevision).toBe(2n);

        const stored = await store.readStream(s);
        expect(ids(stored)).toEqual(ids([...batch1, ...batch2]));
        expect(revisions(stored)).toEqual([0n, 1n, 2n]);
      });

      it('an append mixing existing and new ids is a DuplicateEventConflictError and writes nothing', async () => {
        const s = `${uniquePrefix()}s`;
        const [a, b] = [ev(), ev()];
        await store.append(s, [a], 'no_stream');
        await store.append(s, [b], 0n);
        const fresh = ev();

        // With the expected revision of the original append (a retry that grew) ...
        const atOriginal = await rejection(store.append(s, [b, fresh], 0n));
        expect(atOriginal).toBeInstanceOf(DuplicateEventConflictError);
        expect((atOriginal as DuplicateEventConflictError).code).toBe('event_id_conflict');
        expect((atOriginal as DuplicateEventConflictError).streamId).toBe(s);
        expect(ids((atOriginal as DuplicateEventConflictError).eventIds.map((id) => ({ id })))).toContain(b.id);
        expect(ids((atOriginal as DuplicateEventConflictError).eventIds.map((id) => ({ id })))).not.toContain(fresh.id);

        // ... and with the stream's current revision, where the append itself would fit.
        const atHead = await rejection(store.append(s, [b, fresh], 1n));
        expect(atHead).toBeInstanceOf(DuplicateEventConflictError);
        const viaAny = await rejection(store.append(s, [fresh, b], 'any'));
        expect(viaAny).toBeInstanceOf(DuplicateEventConflictError);

        const stored = await store.readStream(s);
        expect(ids(stored)).toEqual(ids([a, b]));
        expect(revisions(stored)).toEqual([0n, 1n]);
      });
    });

    describe('readStream', () => {
      const data = (i: number) => ({ n: i, label: `event ${i}` });
      let s: string;
      let written: NewEvent[];

      beforeAll(async () => {
        s = `${uniquePrefix()}s`;
        written = [0, 1, 2, 3, 4].map((i) => ev(`Type${i}`, data(i), { index: i, source: 'contract' }));
        await store.append(s, written.slice(0, 3), 'no_stream');
        await store.append(s, written.slice(3), 2n);
      });

      it('reads forwards by default with every field', async () => {
        const events = await store.readStream(s);
        expect(ids(events)).toEqual(ids(written));
        expect(revisions(events)).toEqual([0n, 1n, 2n, 3n, 4n]);
        events.forEach((e, i) => {
          expect(e.streamId).toBe(s);
          expect(e.type).toBe(`Type${i}`);
          expect(e.data).toEqual(data(i));
          expect(e.metadata).toEqual({ index: i, source: 'contract' });
          expect(e.createdAt).toBeInstanceOf(Date);
          expect(Number.isNaN(e.createdAt.getTime())).toBe(false);
        });
        expectStrictlyIncreasing(events);
        expect(await store.readStream(s, { direction: 'forwards' })).toEqual(events);
      });

      it('reads backwards', async () => {
        const events = await store.readStream(s, { direction: 'backwards' });
        expect(revisions(events)).toEqual([4n, 3n, 2n, 1n, 0n]);
        expect(ids(events)).toEqual(ids(written).reverse());
      });

      it('starts at fromRevision (inclusive) in either direction', async () => {
        expect(revisions(await store.readStream(s, { fromRevision: 2n }))).toEqual([2n, 3n, 4n]);
        expect(revisions(await store.readStream(s, { fromRevision: 0n }))).toEqual([0n, 1n, 2n, 3n, 4n]);
        expect(revisions(await store.readStream(s, { fromRevision: 4n }))).toEqual([4n]);
        expect(await store.readStream(s, { fromRevision: 5n })).toEqual([]);
        expect(revisions(await store.readStream(s, { direction: 'backwards', fromRevision: 2n }))).toEqual([2n, 1n, 0n]);
        expect(revisions(await store.readStream(s, { direction: 'backwards', fromRevision: 0n }))).toEqual([0n]);
      });

      it('stops after maxCount', async () => {
        expect(revisions(await store.readStream(s, { maxCount: 2 }))).toEqual([0n, 1n]);
        expect(revisions(await store.readStream(s, { direction: 'backwards', maxCount: 2 }))).toEqual([4n, 3n]);
        expect(revisions(await store.readStream(s, { fromRevision: 1n, maxCount: 3 }))).toEqual([1n, 2n, 3n]);
        expect(revisions(await store.readStream(s, { direction: 'backwards', fromRevision: 3n, maxCount: 2 }))).toEqual([3n, 2n]);
        expect(revisions(await store.readStream(s, { maxCount: 100 }))).toEqual([0n, 1n, 2n, 3n, 4n]);
      });

      it('orders revisions as numbers, not as text (a stream of more than ten events)', async () => {
        const long = `${uniquePrefix()}long`;
        const events = Array.from({ length: 12 }, (_, i) => ev('Long', { i }));
        await store.append(long, events.slice(0, 11), 'no_stream');
        await store.append(long, events.slice(11), 10n);
        const all = Array.from({ length: 12 }, (_, i) => BigInt(i));
        expect(revisions(await store.readStream(long))).toEqual(all);
        expect(ids(await store.readStream(long))).toEqual(ids(events));
        expect(revisions(await store.readStream(long, { direction: 'backwards' }))).toEqual([...all].reverse());
        expect(revisions(await store.readStream(long, { direction: 'backwards', maxCount: 1 }))).toEqual([11n]);
        expect(revisions(await store.readStream(long, { fromRevision: 8n, maxCount: 3 }))).toEqual([8n, 9n, 10n]);
        expect(revisions(await store.readStream(long, { maxCount: 3 }))).toEqual([0n, 1n, 2n]);
      });

      it('reads an unknown stream as empty', async () => {
        const unknown = `${uniquePrefix()}never-written`;
        expect(await store.readStream(unknown)).toEqual([]);
        expect(await store.readStream(unknown, { direction: 'backwards' })).toEqual([]);
        expect(await store.readStream(unknown, { fromRevision: 3n, maxCount: 2 })).toEqual([]);
      });
    });

    it('writes bigint values in data and metadata as decimal strings', async () => {
      const prefix = uniquePrefix();
      const s = `${prefix}s`;
      const after = await logEnd(store);
      const event = ev(
        'Money',
        { amount: 12_345_678_901_234_567_890n, negative: -5n, zero: 0n, list: [1n, 2n], nested: { units: 150n }, plain: 3, text: '7' },
        { budget: 9_007_199_254_740_993n },
      );
      await store.append(s, [event], 'no_stream');
      const expectedData = {
        amount: '12345678901234567890',
        negative: '-5',
        zero: '0',
        list: ['1', '2'],
        nested: { units: '150' },
        plain: 3,
        text: '7',
      };
      const [read] = await store.readStream(s);
      expect(read!.data).toEqual(expectedData);
      expect(read!.metadata).toEqual({ budget: '9007199254740993' });
      const [fromLog] = await readOurs(store, after, prefix, 1);
      expect(fromLog!.data).toEqual(expectedData);
    });

    it('reads back what it appended exactly as another instance reads it from the log, interleaved with that instance\'s events', async () => {
      const prefix = uniquePrefix();
      const after = await logEnd(store);
      const other = h.writer();
      await store.append(`${prefix}a`, [ev('Mine', { amount: 5n, nested: { list: [1, 'x', null, 2n] }, left: undefined }, { actor: 'ops' }), ev('Mine')], 'no_stream');
      await other.append(`${prefix}b`, [ev('Theirs', { n: 1 })], 'no_stream');
      await store.append(`${prefix}a`, [ev('Mine', { last: true })], 1n);
      const seenByOther = await readOurs(h.writer(), after, prefix, 4);
      const seenHere = await readOurs(store, after, prefix, 4);
      expect(seenHere).toEqual(seenByOther);
      expect(seenHere.map((e) => `${e.type} ${e.streamId.slice(prefix.length)}@${e.revision}`)).toEqual(['Mine a@0', 'Mine a@1', 'Theirs b@0', 'Mine a@2']);
      expect(seenHere[0]!.data).toEqual({ amount: '5', nested: { list: [1, 'x', null, '2'] } });
      // Read again here: the same events, whatever this instance kept of its own appends.
      expect(await readOurs(store, after, prefix, 4)).toEqual(seenByOther);
    });

    describe('readAll', () => {
      it('reads from START and strictly after a position', async () => {
        await store.append(`${uniquePrefix()}s`, [ev(), ev(), ev()], 'no_stream');
        const head = await store.readAll({ maxCount: 3 });
        expect(head.length).toBeGreaterThanOrEqual(1);
        expect(head.length).toBeLessThanOrEqual(3);
        expectStrictlyIncreasing(head);
        expect(ids(await store.readAll({ after: START, maxCount: 3 }))).toEqual(ids(head));
        // Strictly after: the event at the position itself is not returned again.
        const rest = await store.readAll({ after: head[0]!.position, maxCount: head.length - 1 || 1 });
        if (head.length > 1) expect(ids(rest)).toEqual(ids(head.slice(1)));
        expect(ids(rest)).not.toContain(head[0]!.id.toLowerCase());
      });

      it.skipIf(!adapter.ownLog)('reads exactly the whole log from START on a fresh store', async () => {
        const fresh = await adapter.create();
        try {
          // Twelve events in the first append: on the events table their global positions
          // run 1..12, so an order by their text ('1', '10', '11', '12', '2', ...) shows up.
          const a = Array.from({ length: 12 }, () => ev());
          const b = [ev()];
          const c = [ev(), ev(), ev()];
          const first = await fresh.store.append('a', a, 'no_stream');
          // Its retry reports the position of the original append's last event (global position 12).
          const retry = await fresh.store.append('a', a, 'no_stream');
          expect(retry.duplicate).toBe(true);
          expect(retry.position).toEqual(first.position);
          await fresh.store.append('b', b, 'no_stream');
          const last = await fresh.store.append('a', c, 11n);
          // readAll shows an event once no older transaction of the cluster is in flight (other
          // test files run beside this one on the same server), so the tail may show a moment later.
          await expect.poll(async () => (await fresh.store.readAll()).at(-1)?.position, { timeout: 10_000 }).toEqual(last.position);
          const all = await fresh.store.readAll();
          expect(ids(all)).toEqual(ids([...a, ...b, ...c]));
          expect(all.map((e) => `${e.streamId}@${e.revision}`)).toEqual([
            ...a.map((_, i) => `a@${i}`),
            'b@0',
            'a@12',
            'a@13',
            'a@14',
          ]);
          expectStrictlyIncreasing(all);
          expect(await fresh.store.readAll({ after: all[all.length - 1]!.position })).toEqual([]);
          expect(ids(await fresh.store.readAll({ after: all[12]!.position }))).toEqual(ids(c));
          expect(ids(await fresh.store.readAll({ maxCount: 2 }))).toEqual(ids(a.slice(0, 2)));
          expect(ids(await fresh.store.readAll({ after: all[1]!.position, maxCount: 10 }))).toEqual(ids(a.slice(2, 12)));
          // A follower from START sees the same log.
          const follower = follow(fresh.store, START, '');
          try {
            await waitUntil(() => follower.count() >= all.length, 'the follower to see the whole log');
          } finally {
            await follower.stop();
          }
          expect(ids(follower.seen)).toEqual(ids(all));
        } finally {
          await fresh.close();
        }
      });

      it('keeps global order consistent with each stream\'s revision order', async () => {
        const prefix = uniquePrefix();
        const [a, b, c] = [`${prefix}a`, `${prefix}b`, `${prefix}c`];
        const after = await logEnd(store);
        const appended: NewEvent[] = [];
        const append = async (stream: string, events: NewEvent[], expected: ExpectedRevision) => {
          appended.push(...events);
          return store.append(stream, events, expected);
        };
        const results: AppendResult[] = [];
        results.push(await append(a, [ev(), ev()], 'no_stream'));
        results.push(await append(b, [ev()], 'no_stream'));
        results.push(await append(a, [ev()], 1n));
        results.push(await append(c, [ev(), ev()], 'any'));
        results.push(await append(b, [ev(), ev()], 0n));
        results.push(await append(a, [ev()], 'any'));

        const ours = await readOurs(store, after, prefix, appended.length);
        // Appends that finished one after the other are in the log in that order.
        expect(ids(ours)).toEqual(ids(appended));
        expectStrictlyIncreasing(ours);
        const heads = expectContiguousPerStream(ours);
        expect(Object.fromEntries(heads)).toEqual({ [a]: 3n, [b]: 2n, [c]: 1n });
        // Each append reports the position of its last event.
        const lastOfAppend = [1, 2, 3, 5, 7, 8].map((i) => ours[i]!.position);
        results.forEach((r, i) => expect(comparePositions(r.position, lastOfAppend[i]!)).toBe(0));
        // Reading strictly after an event's position continues with the next one.
        const afterThird = (await readAllFrom(store, ours[2]!.position)).filter((e) => e.streamId.startsWith(prefix));
        expect(ids(afterThird)).toEqual(ids(appended.slice(3)));
        // maxCount limits a page; the pages join up into the same log.
        const firstPage = await store.readAll({ after, maxCount: 2 });
        expect(firstPage.length).toBe(2);
        const whole = await readAllFrom(store, after, 1000);
        expect(ids(firstPage)).toEqual(ids(whole.slice(0, 2)));
        expect(ids((await readAllFrom(store, after, 3)).slice(0, whole.length))).toEqual(ids(whole));
      });
    });

    describe('follow', () => {
      it('yields existing events, then new ones, and stops when the signal aborts', async () => {
        const prefix = uniquePrefix();
        const after = await logEnd(store);
        const existing = [ev(), ev(), ev()];
        await store.append(`${prefix}x`, existing.slice(0, 2), 'no_stream');
        await store.append(`${prefix}y`, existing.slice(2), 'no_stream');

        const follower = follow(store, after, prefix);
        try {
          await waitUntil(() => follower.count() >= 3, 'the existing events');
          expect(ids(follower.seen)).toEqual(ids(existing));

          const later = [ev(), ev()];
          await store.append(`${prefix}x`, later.slice(0, 1), 1n);
          await store.append(`${prefix}z`, later.slice(1), 'no_stream');
          await waitUntil(() => follower.count() >= 5, 'the new events');
          expect(ids(follower.seen)).toEqual(ids([...existing, ...later]));
          expectStrictlyIncreasing(follower.seen);
          expectContiguousPerStream(follower.seen);
          expect(follower.ended()).toBe(false); // it waits for more rather than ending
        } finally {
          await follower.stop();
        }
        expect(follower.ended()).toBe(true);

        await store.append(`${prefix}x`, [ev()], 2n);
        await sleep(250);
        expect(follower.seen).toHaveLength(5);
      });

      it('stops promptly when aborted while idle, and does not start when already aborted', async () => {
        const prefix = uniquePrefix();
        const after = await logEnd(store);
        const follower = follow(store, after, prefix);
        await sleep(150);
        const started = Date.now();
        await follower.stop();
        expect(Date.now() - started).toBeLessThan(2_000);
        expect(follower.seen).toEqual([]);

        const aborted = new AbortController();
        aborted.abort();
        await store.append(`${prefix}s`, [ev()], 'no_stream');
        const got: RecordedEvent[] = [];
        for await (const event of store.follow({ after, signal: aborted.signal })) got.push(event);
        expect(got).toEqual([]);
      });
    });

    describe('concurrency', () => {
      it('concurrent appenders with a follower: every event exactly once, per-stream order, increasing positions', async () => {
        const WRITERS = 8;
        const APPENDS = 40;
        const prefix = uniquePrefix();
        const after = await logEnd(store);
        const follower = follow(store, after, prefix);

        interface Done {
          readonly stream: string;
          readonly ids: string[];
          readonly result: AppendResult;
        }
        const done: Done[] = [];
        const writers = Array.from({ length: WRITERS }, () => h.writer());
        try {
          await Promise.all(
            writers.map(async (writer, w) => {
              const heads = new Map<string, bigint>();
              for (let i = 0; i < APPENDS; i++) {
                const size = 1 + ((w * 7 + i * 13) % 3);
                const events = Array.from({ length: size }, (_, k) => ev('Concurrent', { w, i, k }));
                let stream: string;
                let expected: ExpectedRevision;
                if (i % 4 === 3) {
                  // Every writer also appends to two shared streams, with 'any'.
                  stream = `${prefix}shared-${(i >> 2) % 2}`;
                  expected = 'any';
                } else {
                  stream = `${prefix}w${w}-${i % 3}`;
                  expected = heads.get(stream) ?? 'no_stream';
                }
                const result = await writer.append(stream, events, expected);
                expect(result.duplicate).toBe(false);
                if (expected !== 'any') {
                  expect(result.nextRevision).toBe((heads.get(stream) ?? -1n) + BigInt(size));
                  heads.set(stream, result.nextRevision);
                }
                done.push({ stream, ids: ids(events), result });
              }
            }),
          );

          const expectedIds = done.flatMap((d) => d.ids);
          await waitUntil(() => follower.count() >= expectedIds.length, `${expectedIds.length} followed events`, 20_000);
          await sleep(250); // a duplicate delivered late would show up here
        } finally {
          await follower.stop();
        }

        const seen = follower.seen;
        const expectedIds = done.flatMap((d) => d.ids);
        // Every event exactly once.
        expect(new Set(ids(seen)).size).toBe(seen.length);
        expect(seen.length).toBe(expectedIds.length);
        expect(new Set(ids(seen))).toEqual(new Set(expectedIds));
        // Positions strictly increase; each stream's revisions arrive as 0, 1, 2, ... without a gap.
        expectStrictlyIncreasing(seen);
        const heads = expectContiguousPerStream(seen);
        // Each stream's events arrive in the stream's own order, and every append's events together.
        for (const [stream, head] of heads) {
          const stored = await store.readStream(stream);
          expect(stored.length).toBe(Number(head) + 1);
          expect(ids(seen.filter((e) => e.streamId === stream))).toEqual(ids(stored));
        }
        const byId = new Map(seen.map((e) => [e.id.toLowerCase(), e]));
        for (const d of done) {
          const events = d.ids.map((id) => byId.get(id)!);
          expect(events.every((e) => e.streamId === d.stream)).toBe(true);
          const last = events[events.length - 1]!;
          expect(last.revision).toBe(d.result.nextRevision);
          expect(comparePositions(d.result.position, last.position)).toBe(0);
          for (let k = 1; k < events.length; k++) expect(events[k]!.revision).toBe(events[k - 1]!.revision + 1n);
        }
        // readAll gives the same log in the same order.
        const logged = (await readAllFrom(store, after)).filter((e) => e.streamId.startsWith(prefix));
        expect(ids(logged)).toEqual(ids(seen));
      }, 45_000);

      it('concurrent writers with exact expected revisions on one stream: each revision is won once', async () => {
        const WRITERS = 6;
        const EACH = 8;
        const prefix = uniquePrefix();
        const s = `${prefix}contended`;
        const writers = Array.from({ length: WRITERS }, () => h.writer());
        let conflicts = 0;
        const won: string[][] = Array.from({ length: WRITERS }, () => []);
        await Promise.all(
          writers.map(async (writer, w) => {
            let expected: ExpectedRevision = 'no_stream';
            let attempts = 0;
            for (let n = 0; n < EACH; ) {
              if (++attempts > 50 * EACH) throw new Error(`writer ${w}: no progress after ${attempts - 1} attempts (expected ${String(expected)})`);
              const event = ev('Contended', { w, n });
              try {
                const result = await writer.append(s, [event], expected);
                expect(result.duplicate).toBe(false);
                expect(result.nextRevision).toBe(expected === 'no_stream' ? 0n : (expected as bigint) + 1n);
                won[w]!.push(event.id);
                expected = result.nextRevision;
                n++;
              } catch (error) {
                if (!(error instanceof ConcurrencyError)) throw error;
                conflicts++;
                expect(error.actual).not.toBe(error.expected);
                // Reload the head and try again, as a command handler would.
                const [head] = await writer.readStream(s, { direction: 'backwards', maxCount: 1 });
                expected = head ? head.revision : 'no_stream';
              }
            }
          }),
        );
        const stored = await store.readStream(s);
        expect(revisions(stored)).toEqual(Array.from({ length: WRITERS * EACH }, (_, i) => BigInt(i)));
        expect(new Set(ids(stored))).toEqual(new Set(won.flat().map((id) => id.toLowerCase())));
        // Each writer's events are in the stream in the order it wrote them.
        for (const mine of won) {
          const order = ids(stored).filter((id) => mine.includes(id));
          expect(order).toEqual(mine.map((id) => id.toLowerCase()));
        }
        expect(conflicts).toBeGreaterThanOrEqual(0);
      }, 30_000);

      it("concurrent 'no_stream' appends to one new stream: one wins, the others get a ConcurrencyError", async () => {
        const s = `${uniquePrefix()}created-once`;
        const writers = Array.from({ length: 6 }, () => h.writer());
        const outcomes = await Promise.allSettled(writers.map((w) => w.append(s, [ev()], 'no_stream')));
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        expect(won).toHaveLength(1);
        for (const o of lost) {
          expect(o.reason).toBeInstanceOf(ConcurrencyError);
          expect((o.reason as ConcurrencyError).actual).toBe(0n);
        }
        expect(revisions(await store.readStream(s))).toEqual([0n]);
      });
    });

    describe.skipIf(!adapter.rawConnections)('out-of-order commits (Postgres)', () => {
      /** Client A: a transaction that inserts one event as the adapter would, and stays open. */
      async function openTransaction(stream: string) {
        const client = await h.raw!();
        const id = randomUUID();
        await client.query('BEGIN');
        const { rows } = await client.query<{ xid: string; gp: string }>(
          `INSERT INTO events (stream_id, stream_revision, event_id, type, data, transaction_id)
           VALUES ($1, 0, $2::uuid, 'SlowCommit', '{}'::jsonb, pg_current_xact_id())
           RETURNING transaction_id::text AS xid, global_position::text AS gp`,
          [stream, id],
        );
        const position: Position = { commit: BigInt(rows[0]!.xid), prepare: BigInt(rows[0]!.gp) };
        return {
          id,
          position,
          commit: () => client.query('COMMIT'),
          rollback: () => client.query('ROLLBACK'),
        };
      }

      it('a reader checkpointing on returned positions never skips a transaction that commits late', async () => {
        const prefix = uniquePrefix();
        const checkpoint0 = await logEnd(store);
        const follower = follow(store, checkpoint0, prefix);
        try {
          const a = await openTransaction(`${prefix}a`);
          let committed = false;
          try {
            // B is appended through the adapter and commits while A is still open:
            // B has the larger global_position AND the larger transaction id.
            const bEvent = ev('FastCommit');
            const b = await store.append(`${prefix}b`, [bEvent], 'no_stream');
            expect(b.position.prepare).toBeGreaterThan(a.position.prepare);
            expect(b.position.commit).toBeGreaterThan(a.position.commit);
            const [raw] = await store.readStream(`${prefix}b`);
            expect(raw!.id).toBe(bEvent.id);

            // While A is open, readAll returns nothing that would move a checkpoint past A.
            const visible = await readAllFrom(store, checkpoint0);
            expect(ids(visible)).not.toContain(bEvent.id);
            for (const e of visible) expect(comparePositions(e.position, a.position)).toBeLessThan(0);
            const checkpoint1 = visible.length > 0 ? visible[visible.length - 1]!.position : checkpoint0;
            await sleep(300); // the follower polls every 100 ms
            expect(follower.seen).toEqual([]);

            await a.commit();
            committed = true;

            // Reading on from the checkpoint returns A, then B.
            const next = await readOurs(store, checkpoint1, prefix, 2);
            expect(ids(next)).toEqual([a.id, bEvent.id]);
            expect(comparePositions(next[0]!.position, a.position)).toBe(0);
            expect(comparePositions(next[1]!.position, b.position)).toBe(0);
            await waitUntil(() => follower.count() >= 2, 'the follower to see A and B');
            expect(ids(follower.seen)).toEqual([a.id, bEvent.id]);
          } finally {
            if (!committed) await a.rollback().catch(() => {});
          }
        } finally {
          await follower.stop();
        }
      });

      it('a late transaction that rolls back holds readers back only while it is open', async () => {
        const prefix = uniquePrefix();
        const checkpoint0 = await logEnd(store);
        const a = await openTransaction(`${prefix}a`);
        let ended = false;
        try {
          const bEvent = ev('FastCommit');
          await store.append(`${prefix}b`, [bEvent], 'no_stream');
          expect(ids(await readAllFrom(store, checkpoint0))).not.toContain(bEvent.id);
          await a.rollback();
          ended = true;
          const next = await readOurs(store, checkpoint0, prefix, 1);
          expect(ids(next)).toEqual([bEvent.id]);
          expect(await store.readStream(`${prefix}a`)).toEqual([]);
        } finally {
          if (!ended) await a.rollback().catch(() => {});
        }
      });
    });
  });
}

eventStoreContract('pglite', pglite);
eventStoreContract('postgres', postgres);
eventStoreContract('eventstoredb', eventStoreDb);
