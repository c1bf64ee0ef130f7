import { setTimeout as sleep } from 'node:timers/promises';
import type { Sql, SqlQuery } from '../../storage/sql';
import { uniqueViolation } from '../../storage/sql';
import {
  ConcurrencyError,
  DuplicateEventConflictError,
  START,
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type FollowOptions,
  type NewEvent,
  type Position,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
} from './port';
import { toJsonValue } from './json';

/** The largest revision a `bigint` column holds. */
const BIGINT_MAX = 2n ** 63n - 1n;

export const EVENTS_SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  global_position bigserial PRIMARY KEY,
  stream_id text NOT NULL,
  stream_revision bigint NOT NULL,
  event_id uuid NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  transaction_id xid8 NOT NULL,
  CONSTRAINT events_event_id_key UNIQUE (event_id),
  CONSTRAINT events_stream_revision_key UNIQUE (stream_id, stream_revision)
);
CREATE INDEX IF NOT EXISTS events_log_order ON events (transaction_id, global_position);
`;

/** `$1` stream, `$2` 'any' or 'exact', `$3` expected revision, `$4` the events as a JSON array,
 * `$5` the id of the event expected at revision `$3` or null (AppendOptions.expectedEventId: one
 * probe of the (stream, revision) index, on the page the head was just read from). */
const appendStatement = (durable: boolean) =>
  // set_config(..., true) lasts for this statement's own transaction: its commit alone
  // does not wait for the WAL flush. The head CTE is always evaluated, so the setting is too.
  `WITH head AS (SELECT coalesce(max(stream_revision), -1) AS rev${durable ? '' : ", set_config('synchronous_commit', 'off', true) AS sc"}
                  FROM events WHERE stream_id = $1),
        inserted AS (
          INSERT INTO events (stream_id, stream_revision, event_id, type, data, metadata, transaction_id)
          SELECT $1, head.rev + fresh.ord, (fresh.e->>'id')::uuid, fresh.e->>'type', fresh.e->'data', fresh.e->'metadata', pg_current_xact_id()
            FROM head, jsonb_array_elements($4::jsonb) WITH ORDINALITY AS fresh (e, ord)
           WHERE $2 = 'any' OR (head.rev = $3::bigint AND ($5::uuid IS NULL OR EXISTS (
                   SELECT 1 FROM events seen WHERE seen.stream_id = $1 AND seen.stream_revision = $3::bigint AND seen.event_id = $5::uuid)))
           ORDER BY fresh.ord
          RETURNING global_position, transaction_id, created_at)
   SELECT head.rev::text AS head, inserted.global_position::text AS global_position, inserted.transaction_id::text AS transaction_id,
          (extract(epoch FROM inserted.created_at) * 1000)::float8 AS created_ms
     FROM head LEFT JOIN inserted ON true
    ORDER BY inserted.global_position`;
const APPEND = appendStatement(true);
const APPEND_WITHOUT_FLUSH = appendStatement(false);

interface EventRow {
  global_position: string;
  stream_id: string;
  stream_revision: string;
  event_id: string;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  /** Milliseconds since the epoch: a number is read far faster than a timestamptz's text. */
  created_ms: number;
  transaction_id: string;
}

/** The text aliases below shadow the columns in a bare ORDER BY (Postgres binds an ORDER BY name
 * to an output column first): order by `events.<column>`, never by the bare name. */
const COLUMNS = `global_position::text AS global_position, stream_id, stream_revision::text AS stream_revision,
  event_id::text AS event_id, type, data, metadata, (extract(epoch FROM created_at) * 1000)::float8 AS created_ms,
  transaction_id::text AS transaction_id`;

function toRecorded(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    streamId: row.stream_id,
    revision: BigInt(row.stream_revision),
    position: { commit: BigInt(row.transaction_id), prepare: BigInt(row.global_position) },
    type: row.type,
    data: row.data,
    metadata: row.metadata ?? {},
    createdAt: new Date(row.created_ms),
  };
}

/** The global log after a position (`$1` commit, `$2` prepare), below the oldest transaction in flight, `$3` at most. */
const READ_ALL = `FROM events
  WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
    AND (transaction_id, global_position) > ($1::text::xid8, $2::bigint)
  ORDER BY events.transaction_id, events.global_position
  LIMIT $3`;

/** Events appended by this process kept at most, until read back: a few hundred milliseconds of a busy
 * gateway, several batches of the runner (each entry is the event as an object tree, about a kilobyte). */
const RECENT_APPENDS = 4_000;

/**
 * The events this process appended lately, as a reader of the log would get them, until a read
 * of the log takes them: the projection runner reads every event back within a moment, and
 * reading one from Postgres again costs more on both sides (jsonb turned back into text, that
 * text parsed again) than the rest of its projection. The oldest are forgotten past
 * RECENT_APPENDS; a reader then gets them from the table, as it does events of other processes.
 */
class RecentAppends {
  private readonly events = new Map<string, RecordedEvent>();

  get size(): number {
    return this.events.size;
  }

  /** The database may have lost some of them (Sql.onReset): a reader gets what the table holds. */
  clear() {
    this.events.clear();
  }

  keep(globalPosition: string, event: RecordedEvent) {
    this.events.set(globalPosition, event);
    if (this.events.size > RECENT_APPENDS) this.events.delete(this.events.keys().next().value as string);
  }

  /** The event at a position of the log, if it is the one this process appended there. */
  take(globalPosition: string, eventId: string): RecordedEvent | undefined {
    const event = this.events.get(globalPosition);
    if (event === undefined) return undefined;
    this.events.delete(globalPosition);
    return event.id === eventId ? event : undefined;
  }
}

/**
 * The events table on Postgres or PGlite.
 *
 * The global log is ordered by (transaction_id, global_position) and readers only see
 * events of transactions older than the oldest one still running: a bigserial alone is
 * handed out before commit, so a reader ordering by it could pass over an event that
 * commits later with a smaller number. Every transaction id below the snapshot's xmin
 * has finished, and every transaction that can still commit has an id at or above it.
 */
export function createPostgresEventStore(sql: Sql): EventStore {
  const recent = new RecentAppends();
  sql.onReset(() => recent.clear());
  const appended = new Set<() => void>();
  const wake = () => {
    for (const fn of appended) fn();
  };

  async function existingIds(db: SqlQuery, ids: readonly string[]) {
    return db.query<{ event_id: string; stream_id: string; stream_revision: string; global_position: string; transaction_id: string }>(
      `SELECT event_id::text AS event_id, stream_id, stream_revision::text AS stream_revision,
              global_position::text AS global_position, transaction_id::text AS transaction_id
         FROM events WHERE event_id = ANY($1::uuid[]) ORDER BY events.global_position`,
      [ids],
    );
  }

  /** A retried append whose first try committed: every id is already in this stream. */
  async function asDuplicate(streamId: string, events: readonly NewEvent[]): Promise<AppendResult | null> {
    const found = await existingIds(sql, events.map((e) => e.id));
    if (found.length === 0) return null;
    if (found.length !== events.length || found.some((r) => r.stream_id !== streamId))
      throw new DuplicateEventConflictError(streamId, found.map((r) => r.event_id));
    const last = found[found.length - 1]!;
    const [head] = await sql.query<{ rev: string }>(
      'SELECT max(stream_revision)::text AS rev FROM events WHERE stream_id = $1',
      [streamId],
    );
    return {
      duplicate: true,
      nextRevision: BigInt(head!.rev),
      position: { commit: BigInt(last.transaction_id), prepare: BigInt(last.global_position) },
    };
  }

  /**
   * One statement, so one round trip and its own transaction: read the head, check the
   * expected revision and insert, with the insert as the transaction's only write (its
   * transaction id is taken then, after the check: see the ordering note above). A
   * writer that raced us fails the unique (stream_id, stream_revision) constraint.
   * The events travel as one JSON array, so the text is the same for any number of them
   * and the server plans it once per connection (a named statement).
   */
  async function tryAppend(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision, options: AppendOptions): Promise<AppendResult> {
    const plain = toJsonValue(events.map((event) => ({ id: event.id, type: event.type, data: event.data, metadata: event.metadata ?? {} }))) as Array<{
      id: string;
      type: string;
      data: unknown;
      metadata: Record<string, unknown>;
    }>;
    const rows = await sql.query<{ head: string; global_position: string | null; transaction_id: string | null; created_ms: number | null }>(
      options.durable !== false ? APPEND : APPEND_WITHOUT_FLUSH,
      [
        streamId,
        expected === 'any' ? 'any' : 'exact',
        expected === 'any' ? '-1' : String(expected === 'no_stream' ? -1n : expected),
        JSON.stringify(plain),
        typeof expected === 'bigint' && expected >= 0n ? (options.expectedEventId ?? null) : null,
      ],
    );
    const current = BigInt(rows[0]!.head);
    const last = rows[rows.length - 1]!;
    if (last.global_position === null || last.transaction_id === null)
      throw new ConcurrencyError(streamId, expected, current === -1n ? 'no_stream' : current);
    rows.forEach((row, i) =>
      recent.keep(row.global_position!, {
        id: plain[i]!.id,
        streamId,
        revision: current + 1n + BigInt(i),
        position: { commit: BigInt(row.transaction_id!), prepare: BigInt(row.global_position!) },
        type: plain[i]!.type,
        data: plain[i]!.data,
        metadata: plain[i]!.metadata,
        createdAt: new Date(row.created_ms!),
      }),
    );
    return {
      duplicate: false,
      nextRevision: current + BigInt(events.length),
      position: { commit: BigInt(last.transaction_id), prepare: BigInt(last.global_position) },
    };
  }

  return {
    engine: sql.kind,

    async append(streamId, events, expected, options = {}) {
      if (events.length === 0) throw new Error('append needs at least one event');
      for (let attempt = 0; ; attempt++) {
        try {
          const result = await tryAppend(streamId, events, expected, options);
          wake();
          return result;
        } catch (error) {
          const constraint = error instanceof ConcurrencyError ? 'revision' : uniqueViolation(error);
          if (constraint === null) throw error;
          const duplicate = await asDuplicate(streamId, events);
          if (duplicate) return duplicate;
          if (error instanceof ConcurrencyError) throw error;
          // A unique violation on the revision: another writer got there first.
          if (expected === 'any' && attempt < 20) continue;
          const [head] = await sql.query<{ rev: string | null }>(
            'SELECT max(stream_revision)::text AS rev FROM events WHERE stream_id = $1',
            [streamId],
          );
          throw new ConcurrencyError(streamId, expected, head?.rev == null ? 'no_stream' : BigInt(head.rev));
        }
      }
    },

    async readStream(streamId, options: ReadStreamOptions = {}) {
      const backwards = options.direction === 'backwards';
      const params: unknown[] = [streamId];
      let where = 'stream_id = $1';
      if (options.fromRevision !== undefined) {
        params.push(String(options.fromRevision));
        where += backwards ? ' AND stream_revision <= $2::bigint' : ' AND stream_revision >= $2::bigint';
        // A stream's revisions are dense (0, 1, 2, …): a page forwards is a closed range of them. Bounded,
        // the read stays a page's worth of index whatever the planner thinks of a long stream's rows.
        const end = !backwards && options.maxCount !== undefined ? options.fromRevision + BigInt(Math.max(0, Math.floor(options.maxCount))) : null;
        // (Past a bigint, no revision can be there anyway: no bound.)
        if (end !== null && end <= BIGINT_MAX) {
          params.push(String(end));
          where += ' AND stream_revision < $3::bigint';
        }
      }
      const limit = options.maxCount !== undefined ? ` LIMIT ${Math.max(0, Math.floor(options.maxCount))}` : '';
      const rows = await sql.query<EventRow>(
        `SELECT ${COLUMNS} FROM events WHERE ${where} ORDER BY events.stream_revision ${backwards ? 'DESC' : 'ASC'}${limit}`,
        params,
      );
      return rows.map(toRecorded);
    },

    async readAll(options: ReadAllOptions = {}) {
      const after = options.after ?? START;
      const range = [after.commit < 0n ? '0' : String(after.commit), String(after.prepare), options.maxCount ?? 1000];
      // Nothing of ours to read back: one query with the events' contents.
      if (recent.size === 0) return (await sql.query<EventRow>(`SELECT ${COLUMNS} ${READ_ALL}`, range)).map(toRecorded);
      // The log's order and the events' ids, then the contents of only those this process did not append.
      const heads = await sql.query<{ global_position: string; event_id: string }>(
        `SELECT global_position::text AS global_position, event_id::text AS event_id ${READ_ALL}`,
        range,
      );
      const events = heads.map((head) => recent.take(head.global_position, head.event_id));
      const missing = heads.filter((_, i) => events[i] === undefined).map((head) => head.global_position);
      if (missing.length > 0) {
        const rows = await sql.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE global_position = ANY($1::bigint[])`, [missing]);
        const fetched = new Map(rows.map((row) => [row.global_position, toRecorded(row)]));
        heads.forEach((head, i) => (events[i] ??= fetched.get(head.global_position)));
      }
      return events as RecordedEvent[];
    },

    async headPosition() {
      const [row] = await sql.query<{ c: string; p: string }>(
        `SELECT transaction_id::text AS c, global_position::text AS p FROM events
          ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1`,
      );
      return row ? { commit: BigInt(row.c), prepare: BigInt(row.p) } : START;
    },

    async *follow(options: FollowOptions = {}) {
      let after: Position = options.after ?? START;
      const signal = options.signal;
      while (!signal?.aborted) {
        const batch = await this.readAll({ after, maxCount: 500 });
        for (const event of batch) {
          if (signal?.aborted) return;
          after = event.position;
          yield event;
        }
        if (batch.length > 0) continue;
        // Idle: wait for an append in this process, or poll for other writers.
        await new Promise<void>((resolve) => {
          const done = () => {
            appended.delete(done);
            signal?.removeEventListener('abort', done);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(done, 100);
          appended.add(done);
          signal?.addEventListener('abort', done, { once: true });
        });
      }
    },

    onReset: (listener) => sql.onReset(listener),

    async close() {
      await sleep(0);
    },
  };
}

export async function migrateEvents(sql: Sql): Promise<void> {
  await sql.exec(EVENTS_SCHEMA);
}
