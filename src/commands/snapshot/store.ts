import type { Sql } from '../../storage/sql';

/** The latest snapshot of one stream: its state folded up to `revision`, whose event is `eventId`. */
export interface Snapshot {
  readonly revision: bigint;
  readonly eventId: string;
  readonly version: string;
  /** encodeState's output. */
  readonly state: unknown;
}

/** Where snapshots are kept: the latest per stream. Every engine keeps them in the gateway's
 * database (EventStoreDB has no snapshots of its own); they are a cache of the log, never a source. */
export interface SnapshotStore {
  load(streamId: string): Promise<Snapshot | null>;
  /** Replaces the one stored unless that one is newer and of the same version (two processes may
   * snapshot the same stream; one at the same revision replaces a spoiled one). */
  save(streamId: string, snapshot: Snapshot): Promise<void>;
}

export const SNAPSHOT_SCHEMA = `
CREATE TABLE IF NOT EXISTS stream_snapshots (
  stream_id text PRIMARY KEY,
  revision bigint NOT NULL,
  event_id text NOT NULL,
  version text NOT NULL,
  state text NOT NULL,
  taken_at timestamptz NOT NULL DEFAULT now()
);`;

export function sqlSnapshotStore(sql: Sql): SnapshotStore {
  return {
    async load(streamId) {
      const [row] = await sql.query<{ revision: string; event_id: string; version: string; state: string }>(
        'SELECT revision::text AS revision, event_id, version, state FROM stream_snapshots WHERE stream_id = $1',
        [streamId],
      );
      if (!row) return null;
      // Unreadable JSON is a snapshot that is not there (the stream is read from its start).
      let state: unknown;
      try {
        state = JSON.parse(row.state);
      } catch {
        return null;
      }
      return { revision: BigInt(row.revision), eventId: row.event_id, version: row.version, state };
    },
    async save(streamId, snapshot) {
      // Without waiting for the WAL flush: a snapshot is a cache of what the log holds, and one lost in a crash
      // costs a longer read later; a flush per snapshot took a pool connection for a disk sync (10-30 ms here).
      await sql.transaction((tx) => tx.query(
        `INSERT INTO stream_snapshots (stream_id, revision, event_id, version, state) VALUES ($1, $2::bigint, $3, $4, $5)
         ON CONFLICT (stream_id) DO UPDATE SET revision = EXCLUDED.revision, event_id = EXCLUDED.event_id,
           version = EXCLUDED.version, state = EXCLUDED.state, taken_at = now()
         WHERE NOT (stream_snapshots.revision > EXCLUDED.revision AND stream_snapshots.version = EXCLUDED.version)`,
        [streamId, String(snapshot.revision), snapshot.eventId, snapshot.version, JSON.stringify(snapshot.state)],
      ), { durable: false });
    },
  };
}
