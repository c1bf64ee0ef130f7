import type { EventStore } from '../../events/store/port';
import type { Sql } from '../../storage/sql';

/** An aggregate whose streams are snapshotted: how its streams are named, the snapshot version the
 * running code reads, how often a snapshot is taken, and how to load a stream through its handler. */
export interface SnapshottedKind {
  /** What every stream of the aggregate starts with (`wallet-`). */
  readonly prefix: string;
  readonly version: string;
  readonly every: bigint;
  /** Loads the stream through its handler and resolves once the snapshot that load took is written. */
  load(streamId: string): Promise<unknown>;
}

export interface StreamBehind {
  readonly streamId: string;
  /** The stream's last revision, and how many events a load must fold (from its usable snapshot, or all). */
  readonly head: bigint;
  readonly unsnapshotted: bigint;
}

export interface BackfillOutcome {
  /** Streams found `every` events or more past a usable snapshot (or with none), and loaded. */
  readonly found: number;
  readonly loaded: number;
  readonly events: number;
  readonly ms: number;
  /** Why it ended before loading every stream it found: `stopped` or an error's message. */
  readonly cut: string | null;
}

/**
 * Every stream of the given kinds whose usable snapshot (the running version's) is `every` events or
 * more behind its head, or that has none: a history written before snapshots existed, by a restore or
 * an import past the command side, or whose snapshots a new state shape voided. Longest fold first.
 * One index probe per stream (a loose scan of the events' (stream_id, revision) index), not a read of
 * the log. Only where the events are in the SQL database; EventStoreDB's streams are snapshotted at
 * their first load, as before.
 */
export async function streamsBehindTheirSnapshots(sql: Sql, store: EventStore, kinds: readonly SnapshottedKind[]): Promise<StreamBehind[]> {
  if (store.engine === 'eventstoredb' || kinds.length === 0) return [];
  const rows = await sql.query<{ stream_id: string; head: string; revision: string | null; version: string | null }>(
    `WITH RECURSIVE streams AS (
       (SELECT stream_id FROM events ORDER BY stream_id LIMIT 1)
       UNION ALL
       SELECT (SELECT e.stream_id FROM events e WHERE e.stream_id > s.stream_id ORDER BY e.stream_id LIMIT 1)
         FROM streams s WHERE s.stream_id IS NOT NULL
     )
     SELECT s.stream_id, (SELECT max(e.stream_revision) FROM events e WHERE e.stream_id = s.stream_id)::text AS head,
            snap.revision::text AS revision, snap.version
       FROM streams s LEFT JOIN stream_snapshots snap ON snap.stream_id = s.stream_id
      WHERE s.stream_id IS NOT NULL AND (${kinds.map((_, i) => `starts_with(s.stream_id, $${i + 1})`).join(' OR ')})`,
    kinds.map((k) => k.prefix),
  );
  const behind: StreamBehind[] = [];
  for (const row of rows) {
    const kind = kinds.find((k) => row.stream_id.startsWith(k.prefix));
    if (!kind) continue;
    const head = BigInt(row.head);
    const from = row.revision !== null && row.version === kind.version ? BigInt(row.revision) : -1n;
    if (head - from >= kind.every) behind.push({ streamId: row.stream_id, head, unsnapshotted: head - from });
  }
  return behind.sort((a, b) => (a.unsnapshotted < b.unsnapshotted ? 1 : a.unsnapshotted > b.unsnapshotted ? -1 : 0));
}

/**
 * Snapshots, in the background at start, the streams a first load would otherwise fold from far back
 * (`streamsBehindTheirSnapshots`): each is loaded through its handler, one at a time, which caches the
 * state and takes the snapshot (StreamCache). A call for one of them that comes meanwhile queues in
 * that stream's lane behind the load and is answered from its fold; a call for any other stream is not
 * held. `stop()` ends it after the stream in hand.
 */
export class SnapshotBackfill {
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    private readonly kinds: readonly SnapshottedKind[],
  ) {}

  /** Never throws: a failure ends the backfill (the streams left are snapshotted at their first load). */
  async run(): Promise<BackfillOutcome> {
    const started = performance.now();
    let found = 0;
    let loaded = 0;
    let events = 0;
    let cut: string | null = null;
    try {
      const behind = await streamsBehindTheirSnapshots(this.sql, this.store, this.kinds);
      found = behind.length;
      for (const stream of behind) {
        if (this.stopped) {
          cut = 'stopped';
          break;
        }
        await this.kinds.find((k) => stream.streamId.startsWith(k.prefix))!.load(stream.streamId);
        loaded += 1;
        events += Number(stream.unsnapshotted);
      }
    } catch (error) {
      cut = error instanceof Error ? error.message : String(error);
    }
    return { found, loaded, events, ms: Math.round(performance.now() - started), cut };
  }

  stop(): void {
    this.stopped = true;
  }
}
