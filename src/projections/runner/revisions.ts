import type { RecordedEvent } from '../../events/store/port';
import type { SqlQuery } from '../../storage/sql';
import type { Projection } from '../projection';

/** A projection met an event whose stream revision is not the last one seen + 1:
 * the log is not what the projection was built from. It stops rather than guess. */
export class StreamGapError extends Error {
  constructor(
    readonly projection: string,
    readonly streamId: string,
    readonly expected: bigint,
    readonly found: bigint,
  ) {
    super(`projection ${projection}: stream ${streamId} jumped from revision ${expected - 1n} to ${found}`);
    this.name = 'StreamGapError';
  }
}

const key = (projection: string, streamId: string) => `${projection}\u0000${streamId}`;

/** Each followed stream must go on at the revision after the last one its projection
 * saw. One read and one write for all the projections of a transaction; a projection
 * with a gap is left out of `clean` and records nothing. The same read tells which of the
 * streams each projection has parked, and from which revision (see ./parked). */
export async function checkRevisions(
  tx: SqlQuery,
  followed: ReadonlyMap<Projection, readonly RecordedEvent[]>,
): Promise<{ clean: Projection[]; gap: StreamGapError | null; parked: Map<Projection, Map<string, bigint>> }> {
  const parked = new Map<Projection, Map<string, bigint>>();
  const streams = new Set<string>();
  for (const events of followed.values()) for (const e of events) streams.add(e.streamId);
  const streamIds = [...streams];
  if (streamIds.length === 0) return { clean: [...followed.keys()], gap: null, parked };
  const rows = await tx.query<{ projection: string; stream_id: string; revision: string; parked_from: string | null }>(
    `SELECT projection, stream_id, revision::text AS revision, parked_from::text AS parked_from FROM projection_stream_revisions
      WHERE projection = ANY($1::text[]) AND stream_id = ANY($2::text[])`,
    [[...followed.keys()].map((p) => p.name), streamIds],
  );
  const last = new Map(rows.map((r) => [key(r.projection, r.stream_id), BigInt(r.revision)]));
  for (const row of rows) {
    if (row.parked_from === null) continue;
    const projection = [...followed.keys()].find((p) => p.name === row.projection)!;
    if (!parked.has(projection)) parked.set(projection, new Map());
    parked.get(projection)!.set(row.stream_id, BigInt(row.parked_from));
  }
  const clean: Projection[] = [];
  const touched = new Map<string, { projection: string; streamId: string; revision: bigint }>();
  let gap: StreamGapError | null = null;
  for (const [projection, events] of followed) {
    const seen = new Map<string, bigint>();
    let found: StreamGapError | null = null;
    // A batch is mostly runs of one stream's events: the map is asked where a run starts, not per event.
    let stream: string | null = null;
    let expected = 0n;
    for (const e of events) {
      if (e.streamId !== stream) {
        if (stream !== null) seen.set(stream, expected - 1n);
        stream = e.streamId;
        expected = (seen.get(stream) ?? last.get(key(projection.name, stream)) ?? -1n) + 1n;
      }
      if (e.revision !== expected) {
        found = new StreamGapError(projection.name, e.streamId, expected, e.revision);
        break;
      }
      expected += 1n;
    }
    if (stream !== null && found === null) seen.set(stream, expected - 1n);
    if (found) {
      gap ??= found;
      continue;
    }
    clean.push(projection);
    for (const [streamId, revision] of seen) touched.set(key(projection.name, streamId), { projection: projection.name, streamId, revision });
  }
  const rowsToWrite = [...touched.values()];
  if (rowsToWrite.length)
    await tx.query(
      `INSERT INTO projection_stream_revisions (projection, stream_id, revision)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
       ON CONFLICT (projection, stream_id) DO UPDATE SET revision = EXCLUDED.revision`,
      [rowsToWrite.map((t) => t.projection), rowsToWrite.map((t) => t.streamId), rowsToWrite.map((t) => String(t.revision))],
    );
  return { clean, gap, parked };
}
