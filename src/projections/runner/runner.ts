import { decodeRecorded } from '../../events/catalog';
import { START, comparePositions, type EventStore, type Position, type RecordedEvent } from '../../events/store/port';
import type { Sql, SqlQuery } from '../../storage/sql';
import type { Projection } from '../projection';

export const RUNNER_SCHEMA = `
CREATE TABLE IF NOT EXISTS projection_checkpoints (
  name text PRIMARY KEY,
  commit_position bigint NOT NULL,
  prepare_position bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS projection_stream_revisions (
  projection text NOT NULL,
  stream_id text NOT NULL,
  revision bigint NOT NULL,
  PRIMARY KEY (projection, stream_id)
);`;

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

const BATCH = 500;

/**
 * Follows the global log and feeds each projection, storing its checkpoint in the
 * same transaction as its rows. Several instances may run at once: the checkpoint
 * row is locked and compared before a batch is written, so a batch another
 * instance already applied is dropped and read again.
 */
export class ProjectionRunner {
  private wakeUp: (() => void) | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly waiters = new Set<{ position: Position; resolve: () => void; reject: (e: unknown) => void }>();
  private failure: unknown = null;
  private readonly positions = new Map<string, Position>();

  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    readonly projections: readonly Projection[],
    private readonly pollMs = 100,
  ) {}

  async migrate(): Promise<void> {
    await this.sql.exec(RUNNER_SCHEMA);
    for (const p of this.projections) await this.sql.exec(p.schema);
    for (const p of this.projections)
      await this.sql.query(
        `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ($1, -1, -1) ON CONFLICT (name) DO NOTHING`,
        [p.name],
      );
  }

  byName(name: string): Projection {
    const projection = this.projections.find((p) => p.name === name);
    if (!projection) throw new Error(`unknown projection "${name}"; known: ${this.projections.map((p) => p.name).join(', ')}`);
    return projection;
  }

  async checkpoint(name: string): Promise<Position> {
    const [row] = await this.sql.query<{ c: string; p: string }>(
      'SELECT commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints WHERE name = $1',
      [name],
    );
    return row ? { commit: BigInt(row.c), prepare: BigInt(row.p) } : START;
  }

  /** Applies everything currently readable to every projection. Projections at the
   * same checkpoint (the usual case) share one read of the log. */
  async catchUp(): Promise<void> {
    const batches = new Map<string, Promise<RecordedEvent[]>>();
    for (const projection of this.projections) {
      while (await this.step(projection, batches)) {
        /* keep going until the projection has nothing left to read */
      }
    }
    this.settleWaiters();
  }

  /** One batch for one projection; false when it was already at the head. */
  private async step(projection: Projection, batches = new Map<string, Promise<RecordedEvent[]>>()): Promise<boolean> {
    const from = await this.checkpoint(projection.name);
    const at = `${from.commit}:${from.prepare}`;
    if (!batches.has(at)) batches.set(at, this.store.readAll({ after: from, maxCount: BATCH }));
    const batch = await batches.get(at)!;
    if (batch.length === 0) {
      this.positions.set(projection.name, from);
      return false;
    }
    const applied = await this.sql.transaction(async (tx) => {
      const [row] = await tx.query<{ c: string; p: string }>(
        'SELECT commit_position::text AS c, prepare_position::text AS p FROM projection_checkpoints WHERE name = $1 FOR UPDATE',
        [projection.name],
      );
      if (!row || comparePositions({ commit: BigInt(row.c), prepare: BigInt(row.p) }, from) !== 0) return false;
      await this.applyBatch(tx, projection, batch);
      const last = batch[batch.length - 1]!.position;
      await tx.query(
        'UPDATE projection_checkpoints SET commit_position = $2::bigint, prepare_position = $3::bigint, updated_at = now() WHERE name = $1',
        [projection.name, String(last.commit), String(last.prepare)],
      );
      return true;
    });
    if (applied) this.positions.set(projection.name, batch[batch.length - 1]!.position);
    return true;
  }

  private async applyBatch(tx: SqlQuery, projection: Projection, batch: readonly RecordedEvent[]) {
    const followed = batch.filter((e) => projection.streams.some((prefix) => e.streamId.startsWith(prefix)));
    if (followed.length === 0) return;
    const streamIds = [...new Set(followed.map((e) => e.streamId))];
    const rows = await tx.query<{ stream_id: string; revision: string }>(
      'SELECT stream_id, revision::text AS revision FROM projection_stream_revisions WHERE projection = $1 AND stream_id = ANY($2::text[])',
      [projection.name, streamIds],
    );
    const last = new Map(rows.map((r) => [r.stream_id, BigInt(r.revision)]));
    for (const recorded of followed) {
      const expected = (last.get(recorded.streamId) ?? -1n) + 1n;
      if (recorded.revision !== expected) throw new StreamGapError(projection.name, recorded.streamId, expected, recorded.revision);
      await projection.apply(tx, decodeRecorded(recorded), recorded);
      last.set(recorded.streamId, recorded.revision);
    }
    const touched = streamIds.map((id) => [id, String(last.get(id)!)] as const);
    await tx.query(
      `INSERT INTO projection_stream_revisions (projection, stream_id, revision)
       SELECT $1, s, r::bigint FROM unnest($2::text[], $3::text[]) AS t(s, r)
       ON CONFLICT (projection, stream_id) DO UPDATE SET revision = EXCLUDED.revision`,
      [projection.name, touched.map((t) => t[0]), touched.map((t) => t[1])],
    );
  }

  /** Catches up until every projection has applied the log's current head, waiting for
   * events that older in-flight transactions still hide (operator commands, tests). */
  async catchUpToHead(timeoutMs = 30_000): Promise<void> {
    const head = await this.store.headPosition();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.catchUp();
      if (this.reached(head)) return;
      if (Date.now() > deadline) throw new Error('projections did not reach the head of the log in time');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Empties a projection's tables and replays the whole log into them. */
  async rebuild(name: string): Promise<void> {
    const projection = this.byName(name);
    await this.sql.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM projection_checkpoints WHERE name = $1 FOR UPDATE', [name]);
      for (const table of projection.tables) await tx.query(`DELETE FROM ${table}`);
      await tx.query('DELETE FROM projection_stream_revisions WHERE projection = $1', [name]);
      await tx.query('UPDATE projection_checkpoints SET commit_position = -1, prepare_position = -1, updated_at = now() WHERE name = $1', [name]);
    });
    this.positions.delete(name);
    const head = await this.store.headPosition();
    for (;;) {
      while (await this.step(projection)) {
        /* replay */
      }
      const at = this.positions.get(name);
      if (at !== undefined && comparePositions(at, head) >= 0) return;
      // The head is committed but hidden behind an older transaction still in flight.
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Resolves once every projection has applied the event at `position`. */
  waitFor(position: Position | null): Promise<void> {
    if (position === null || this.reached(position)) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiters.add({ position, resolve, reject });
      this.wake();
    });
  }

  private reached(position: Position): boolean {
    return this.projections.every((p) => {
      const at = this.positions.get(p.name);
      return at !== undefined && comparePositions(at, position) >= 0;
    });
  }

  private settleWaiters() {
    for (const waiter of this.waiters) {
      if (this.reached(waiter.position)) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  wake(): void {
    this.wakeUp?.();
  }

  /** Runs in the background until stop(): catch up, then sleep until woken or polled. */
  start(onError: (error: unknown) => void): void {
    if (this.running) return;
    this.stopped = false;
    this.running = (async () => {
      while (!this.stopped) {
        try {
          await this.catchUp();
          this.failure = null;
        } catch (error) {
          this.failure = error;
          for (const waiter of this.waiters) waiter.reject(error);
          this.waiters.clear();
          onError(error);
        }
        if (this.stopped) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, this.failure ? 1000 : this.pollMs);
          function done() {
            clearTimeout(timer);
            resolve();
          }
          this.wakeUp = done;
        });
        this.wakeUp = null;
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.running;
    this.running = null;
  }
}
