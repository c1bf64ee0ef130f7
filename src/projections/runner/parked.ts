import { UnreadableEventError } from '../../events/catalog';
import type { RecordedEvent } from '../../events/store/port';
import type { SqlQuery } from '../../storage/sql';
import type { BatchWrites, ProjectedEvent, Projection, RebuildMemory } from '../projection';
import { decode, type Decoded } from './shared-reads';

/**
 * Events a projection could not apply, kept aside instead of stopping the projection for every
 * stream. A stream with a parked event has all its later events parked too (`parked_from` in
 * projection_stream_revisions says from which revision): its rows stay as they were before the
 * event, never a state the log does not describe. The revisions of parked events count as seen,
 * so the stream has no gap. A rebuild parks the same events again; after a fix (a catalog that
 * reads an older version, a projection bug fixed) a rebuild applies them.
 */
export const PARKED_SCHEMA = `
CREATE TABLE IF NOT EXISTS projection_parked_events (
  projection text NOT NULL,
  stream_id text NOT NULL,
  revision bigint NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  commit_position bigint NOT NULL,
  prepare_position bigint NOT NULL,
  error text NOT NULL,
  parked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection, stream_id, revision)
);
ALTER TABLE projection_stream_revisions ADD COLUMN IF NOT EXISTS parked_from bigint;`;

export interface Parking {
  readonly event: RecordedEvent;
  readonly error: string;
}

export interface ParkedEvent {
  readonly projection: string;
  readonly streamId: string;
  readonly revision: bigint;
  readonly eventId: string;
  readonly type: string;
  readonly position: { commit: bigint; prepare: bigint };
  readonly error: string;
  readonly parkedAt: Date;
}

/** The error that parks an event when an earlier one of its stream is parked. */
export const afterParked = (from: bigint) => `an earlier event of this stream (revision ${from}) is parked`;

/**
 * Whether an error applying one event would come back every time the event is applied: an event
 * the catalog cannot decode, a value the tables refuse (SQLSTATE class 22, data exception, and 23,
 * integrity constraint), a bug in the projection's own code (TypeError, RangeError). Anything else
 * (a lost connection, a timeout, a deadlock) stops the projection until it goes away, as before:
 * parking on it would leave events out of the read models for good.
 */
export function deterministic(error: unknown): boolean {
  if (error instanceof UnreadableEventError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('22') || code.startsWith('23');
  return error instanceof TypeError || error instanceof RangeError;
}

/** Records a projection's parked events and marks their streams parked from the first of them
 * (their revision rows were written by the revision check of the same transaction). */
export async function recordParked(tx: SqlQuery, projection: string, parked: readonly Parking[]): Promise<void> {
  if (parked.length === 0) return;
  await tx.query(
    `INSERT INTO projection_parked_events (projection, stream_id, revision, event_id, event_type, commit_position, prepare_position, error)
     SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[])
     ON CONFLICT (projection, stream_id, revision) DO NOTHING`,
    [
      projection,
      parked.map((p) => p.event.streamId),
      parked.map((p) => String(p.event.revision)),
      parked.map((p) => p.event.id),
      parked.map((p) => p.event.type),
      parked.map((p) => String(p.event.position.commit)),
      parked.map((p) => String(p.event.position.prepare)),
      parked.map((p) => p.error),
    ],
  );
  const from = new Map<string, bigint>();
  for (const { event } of parked) if (!from.has(event.streamId) || event.revision < from.get(event.streamId)!) from.set(event.streamId, event.revision);
  await tx.query(
    `UPDATE projection_stream_revisions AS r SET parked_from = coalesce(r.parked_from, p.revision)
       FROM unnest($2::text[], $3::bigint[]) AS p(stream_id, revision)
      WHERE r.projection = $1 AND r.stream_id = p.stream_id`,
    [projection, [...from.keys()], [...from.values()].map(String)],
  );
}

/** Parked events per projection (every projection named, 0 when it has none). */
export async function parkedCounts(db: SqlQuery, projections: readonly string[]): Promise<Map<string, number>> {
  const rows = await db.query<{ projection: string; n: number }>(
    'SELECT projection, count(*)::int AS n FROM projection_parked_events GROUP BY projection',
  );
  const counts = new Map(projections.map((name) => [name, 0]));
  for (const row of rows) counts.set(row.projection, Number(row.n));
  return counts;
}

/** Every parked event, in log order, each projection that parked it on its own line. */
export async function parkedEvents(db: SqlQuery): Promise<ParkedEvent[]> {
  const rows = await db.query<{
    projection: string;
    stream_id: string;
    revision: string;
    event_id: string;
    event_type: string;
    c: string;
    p: string;
    error: string;
    parked_ms: number;
  }>(
    `SELECT projection, stream_id, revision::text AS revision, event_id, event_type, commit_position::text AS c,
            prepare_position::text AS p, error, (extract(epoch FROM parked_at) * 1000)::float8 AS parked_ms
       FROM projection_parked_events
      ORDER BY commit_position, prepare_position, projection`,
  );
  return rows.map((r) => ({
    projection: r.projection,
    streamId: r.stream_id,
    revision: BigInt(r.revision),
    eventId: r.event_id,
    type: r.event_type,
    position: { commit: BigInt(r.c), prepare: BigInt(r.p) },
    error: r.error,
    parkedAt: new Date(r.parked_ms),
  }));
}

/**
 * Applies a projection's events of a batch, except those it parks: an event the catalog cannot
 * decode, and every event of a stream after one it parked (here or in an earlier batch). Event by
 * event (after the batch as a whole failed), each event is applied under a savepoint, and one that
 * fails with an error that would come back parks too. Returns what it parked, recorded in `tx`.
 */
export async function applyParking(
  tx: SqlQuery,
  projection: Projection,
  events: readonly RecordedEvent[],
  parkedFrom: ReadonlyMap<string, bigint> | undefined,
  decoded: Decoded,
  writes: BatchWrites,
  eventByEvent: boolean,
  memory: RebuildMemory | undefined,
): Promise<Parking[]> {
  const parking: Parking[] = [];
  const from = new Map(parkedFrom);
  const items: ProjectedEvent[] = [];
  for (const recorded of events) {
    const since = from.size === 0 ? undefined : from.get(recorded.streamId);
    if (since !== undefined) {
      parking.push({ event: recorded, error: afterParked(since) });
      continue;
    }
    const item = decode(recorded, decoded);
    if (item instanceof UnreadableEventError) {
      parking.push({ event: recorded, error: `cannot be decoded: ${item.reason}` });
      from.set(recorded.streamId, recorded.revision);
    } else items.push(item);
  }
  if (!eventByEvent) {
    if (items.length) await projection.applyBatch(tx, items, writes, memory);
  } else {
    for (const item of items) {
      const since = from.get(item.recorded.streamId);
      if (since !== undefined) {
        parking.push({ event: item.recorded, error: afterParked(since) });
        continue;
      }
      await tx.query('SAVEPOINT parking');
      try {
        await projection.applyBatch(tx, [item], writes);
        await tx.query('RELEASE SAVEPOINT parking');
      } catch (error) {
        if (!deterministic(error)) throw error;
        await tx.query('ROLLBACK TO SAVEPOINT parking');
        parking.push({ event: item.recorded, error: cannotApply(error) });
        from.set(item.recorded.streamId, item.recorded.revision);
      }
    }
  }
  await recordParked(tx, projection.name, parking);
  return parking;
}

function cannotApply(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return `cannot be applied: ${typeof code === 'string' ? `[${code}] ` : ''}${message}`;
}
