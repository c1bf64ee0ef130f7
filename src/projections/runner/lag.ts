import { START, comparePositions, type EventStore, type Position } from '../../events/store/port';
import type { Sql } from '../../storage/sql';

/** A projection's distance to the head of the log. */
export interface ProjectionLag {
  /** Events in the log after its checkpoint, counted up to the engine's bound (LAG_COUNT_LIMIT). */
  readonly events: number;
  /** Age of the oldest event after its checkpoint, seconds; 0 when there is none. */
  readonly seconds: number;
}

/** Events counted behind a checkpoint at most: past it a projection is simply far behind, and the
 * count would cost a scan of the backlog at every scrape. EventStoreDB (no count but a read of the
 * events themselves) stops at EVENTSTORE_LAG_COUNT_LIMIT. */
export const LAG_COUNT_LIMIT = 100_000;
export const EVENTSTORE_LAG_COUNT_LIMIT = 1_000;

/** In the events table (Postgres, PGlite): per projection, an index range scan from its
 * checkpoint, bounded; the age on the database's own clock, as the events' created_at. */
const SQL_LAG = `
SELECT c.name, lag.events, coalesce(extract(epoch FROM now() - lag.oldest), 0)::float8 AS seconds
  FROM projection_checkpoints c
  CROSS JOIN LATERAL (
    SELECT count(*)::int AS events, min(behind.created_at) AS oldest FROM (
      SELECT e.created_at FROM events e
       WHERE (e.transaction_id, e.global_position) > (greatest(c.commit_position, 0)::text::xid8, c.prepare_position)
       ORDER BY e.transaction_id, e.global_position
       LIMIT $2) behind) lag
 WHERE c.name = ANY($1::text[])`;

/**
 * How far each projection is behind the log: the events after its checkpoint and how long the
 * oldest of them has waited. Read from the checkpoints table, so it is what every instance sees
 * (not where this process's runner happens to stand).
 */
export async function projectionLag(sql: Sql, store: EventStore, names: readonly string[]): Promise<Map<string, ProjectionLag>> {
  if (store.engine !== 'eventstoredb') {
    const rows = await sql.query<{ name: string; events: number; seconds: number }>(SQL_LAG, [names, LAG_COUNT_LIMIT]);
    return new Map(rows.map((row) => [row.name, { events: Number(row.events), seconds: Math.max(0, Number(row.seconds)) }]));
  }
  // EventStoreDB: the events after each distinct checkpoint (projections usually share one), read.
  const rows = await sql.query<{ name: string; c: string; p: string }>(
    'SELECT name, commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints WHERE name = ANY($1::text[])',
    [names],
  );
  const lags = new Map<string, ProjectionLag>();
  const read = new Map<string, Promise<ProjectionLag>>();
  for (const row of rows) {
    const at: Position = { commit: BigInt(row.c), prepare: BigInt(row.p) };
    const key = `${row.c}:${row.p}`;
    let lag = read.get(key);
    if (!lag) {
      lag = store.readAll({ ...(comparePositions(at, START) === 0 ? {} : { after: at }), maxCount: EVENTSTORE_LAG_COUNT_LIMIT }).then((events) => ({
        events: events.length,
        seconds: events.length === 0 ? 0 : Math.max(0, (Date.now() - events[0]!.createdAt.getTime()) / 1000),
      }));
      read.set(key, lag);
    }
    lags.set(row.name, await lag);
  }
  return lags;
}
