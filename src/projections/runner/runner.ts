/** The projection runner. Long (over 400 lines) and kept whole: catch-up, follow, rebuild and waitFor share
 * one checkpoint state and loop; its separable parts already live beside it (parked.ts, revisions.ts,
 * lag.ts, shared-reads.ts). */
import { START, comparePositions, type EventStore, type Position } from '../../events/store/port';
import type { Sql } from '../../storage/sql';
import { IN_SLICES, LOAD, RebuildMemory, WHOLE, type Projection, type SecondaryIndex } from '../projection';
import { PARKED_SCHEMA, applyParking, deterministic, parkedCounts, parkedEvents, type ParkedEvent, type Parking } from './parked';
import { checkRevisions } from './revisions';
import { projectionLag, type ProjectionLag } from './lag';
import { SharedReads, followedEvents, readBatch, type Read, type Reader } from './shared-reads';

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
);
-- Set while a rebuild replays the projection (a lease it renews): the other runners leave it alone.
ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS rebuild_until timestamptz;`;

export { StreamGapError } from './revisions';
export type { ParkedEvent, Parking } from './parked';

const BATCH = 500;
/** A rebuild reads the log in larger batches: nothing else waits behind its statements. */
const REBUILD_BATCH = 5000;
/** A rebuild's claim on its projections (projection_checkpoints.rebuild_until), renewed every third of it
 * while the rebuild runs and cleared when it ends: a rebuild killed outright holds them this long at most. */
const REBUILD_LEASE_S = 30;
/** maintenance_work_mem for building a rebuilt projection's index: the sort of a few million keys in memory. */
const INDEX_BUILD_MEMORY = '256MB';

/** Where a rebuild stands, told after each batch. */
export interface RebuildProgress {
  /** Events read from the log so far (each read once, for every projection rebuilt). */
  readonly events: number;
  /** The log position reached, and the head the rebuild runs to. */
  readonly at: Position;
  readonly head: Position;
}

/** How `advance` reads: the batch size, whether statements may be sliced, who is told of each batch. */
interface Pass {
  readonly batch: number;
  readonly rebuilding: boolean;
  readonly onBatch?: (events: number, to: Position) => void;
  /** A rebuild's memory per projection, dropped when it can no longer be trusted (RebuildMemory). */
  readonly memory?: Map<Projection, RebuildMemory>;
  /** A rebuild's batches, read once for every projection (SharedReads); else each read when needed. */
  readonly reads?: Reader;
  /** Asked between batches: true ends the pass there (a shutdown must not wait for a long catch-up). */
  readonly halt?: () => boolean;
}
const FOLLOWING: Pass = { batch: BATCH, rebuilding: false };

/** A checkpoint as the runner reads it: where the projection stands, and whether a rebuild holds it. */
interface CheckpointRow {
  readonly name: string;
  readonly c: string;
  readonly p: string;
  readonly rebuilding: boolean | null;
}
const CHECKPOINT_ROWS = `SELECT name, commit_position::text AS c, prepare_position::text AS p, rebuild_until > now() AS rebuilding
  FROM projection_checkpoints WHERE name = ANY($1::text[])`;
const checkpointRow = (r: CheckpointRow) => ({ at: { commit: BigInt(r.c), prepare: BigInt(r.p) }, rebuilding: r.rebuilding === true });
/** Busier than this (share of the time between two batches), the gateway has no time to spare for
 * the runner's extra round trips: it writes a batch in whole statements (BatchWrites). */
const SLICES_BELOW_LOOP_UTILIZATION = 0.75;

export interface RunnerOptions {
  /** How often to look for new events when nobody wakes the runner. */
  readonly pollMs?: number;
  /** Resolves when this process has no queued command left to append (Ledger.idle). */
  readonly pendingAppends?: () => Promise<void>;
  /** Whether the process is busy enough that a batch must be written in whole statements; asked
   * once a batch. Default: this event loop's utilization since the last batch. */
  readonly busy?: () => boolean;
  /** Told, after their transaction committed, of the events a projection has just parked. */
  readonly onParked?: (projection: string, parked: readonly Parking[]) => void;
  /** Events a rebuild reads and applies a batch (default REBUILD_BATCH). */
  readonly rebuildBatch?: number;
  /** false: another process applies the log (`gateway projections run`, PROJECTIONS=external); this runner
   * only reads the checkpoints, so that waitFor and catchUpToHead tell when the read models have caught up.
   * Default true. */
  readonly applies?: boolean;
}

/** How often a runner that does not apply the log reads the checkpoints while somebody waits for them. */
const FOLLOW_WAITING_MS = 5;

/** Whether this event loop was busier than `threshold` since the last time it was asked. */
export function loopBusierThan(threshold: number): () => boolean {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization > threshold;
    last = now;
    return busy;
  };
}

/** What one transaction did for a group of projections that shared a checkpoint. */
interface Outcome {
  readonly applied: Projection[];
  /** Another instance applied the batch first: where they are now must be read again. */
  readonly moved: Projection[];
  /** The first gap or error; the projections it hit are neither applied nor moved. */
  failure: unknown;
  /** Events the applied projections parked. */
  readonly parked: Array<{ projection: string; events: Parking[] }>;
}

/**
 * Follows the global log and feeds the projections, storing their checkpoints in the
 * same transaction as their rows. Projections at the same checkpoint (the usual case)
 * share one read of the log and one transaction per batch. Several instances may run
 * at once: the checkpoint rows are locked and compared before a batch is written, so a
 * projection whose batch another instance already applied is left out and read again.
 */
export class ProjectionRunner {
  private wakeUp: (() => void) | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly waiters = new Set<{ position: Position; resolve: () => void; reject: (e: unknown) => void }>();
  private failure: unknown = null;
  private readonly positions = new Map<string, Position>();

  private readonly pollMs: number;
  private readonly pendingAppends: () => Promise<void>;
  private readonly busy: () => boolean;
  private readonly onParked: NonNullable<RunnerOptions['onParked']>;
  private readonly rebuildBatch: number;
  /** Whether this runner applies the log (RunnerOptions.applies). */
  readonly applies: boolean;

  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    readonly projections: readonly Projection[],
    options: RunnerOptions = {},
  ) {
    // Where each projection stood may have been lost with the database's last commits (a batch and its
    // checkpoint commit without waiting for the flush): ask the checkpoints again before trusting it.
    sql.onReset(() => this.positions.clear());
    this.pollMs = options.pollMs ?? 100;
    this.pendingAppends = options.pendingAppends ?? (async () => {});
    this.busy = options.busy ?? loopBusierThan(SLICES_BELOW_LOOP_UTILIZATION);
    this.onParked = options.onParked ?? (() => {});
    this.rebuildBatch = options.rebuildBatch ?? REBUILD_BATCH;
    this.applies = options.applies ?? true;
  }

  async migrate(): Promise<void> {
    await this.sql.exec(RUNNER_SCHEMA);
    await this.sql.exec(PARKED_SCHEMA);
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

  /** Where each projection stands. `follow`: without the projections another runner is rebuilding (their
   * position is still noted, so that waiters see the rebuild's progress): replaying them beside the rebuild
   * would read the whole log a second time and contend for every batch. */
  private async checkpoints(projections: readonly Projection[], follow = false): Promise<Map<Projection, Position>> {
    const rows = await this.sql.query<CheckpointRow>(CHECKPOINT_ROWS, [projections.map((p) => p.name)]);
    const byName = new Map(rows.map((r) => [r.name, checkpointRow(r)]));
    const at = new Map<Projection, Position>();
    for (const p of projections) {
      const row = byName.get(p.name);
      if (follow && row?.rebuilding) this.positions.set(p.name, row.at);
      else at.set(p, row?.at ?? START);
    }
    return at;
  }

  /** Applies everything currently readable to every projection (or, for a runner that does not apply
   * the log, reads where the worker that does has got to). `halt` is asked between batches: true, and
   * the catch-up ends there (each batch's checkpoint is committed with it: nothing applied is lost). */
  async catchUp(halt?: () => boolean): Promise<void> {
    try {
      if (this.applies) await this.advance(this.projections, halt ? { ...FOLLOWING, halt } : FOLLOWING);
      else for (const [p, at] of await this.checkpoints(this.projections)) this.positions.set(p.name, at);
    } finally {
      this.settleWaiters();
    }
  }

  /** Applies batches until each projection has read an empty or short batch: a short one
   * ended at what was readable then, which is all a catch-up promises. A projection that
   * meets a gap or an error stops; the others go on, and the first failure is thrown at the end. */
  private async advance(projections: readonly Projection[], pass: Pass = FOLLOWING): Promise<void> {
    let at = await this.checkpoints(projections, !pass.rebuilding);
    let failure: unknown = null;
    while (at.size > 0 && !pass.halt?.()) {
      // Embedded PGlite answers on this thread through promises alone: without a turn of the event loop
      // between batches, a long catch-up would hold back everything else (a signal, a listen, requests).
      if (pass.halt) await new Promise((resolve) => setImmediate(resolve));
      if (pass.halt?.()) break;
      const next = new Map<Projection, Position>();
      const moved: Projection[] = [];
      for (const [from, group] of groupByPosition(at)) {
        const read = await (pass.reads?.read(from) ?? readBatch(this.store, from, pass.batch));
        const batch = read.events;
        if (batch.length === 0) {
          for (const p of group) this.positions.set(p.name, from);
          continue;
        }
        const to = batch[batch.length - 1]!.position;
        const outcome = await this.applyGroup(group, from, read, pass);
        for (const p of outcome.applied) {
          this.positions.set(p.name, to);
          if (batch.length === pass.batch) next.set(p, to);
        }
        pass.onBatch?.(batch.length, to);
        // Another instance applied what this rebuild thought its own: its memory no longer says what the tables hold.
        for (const p of outcome.moved) pass.memory?.delete(p);
        moved.push(...outcome.moved);
        failure ??= outcome.failure;
        for (const { projection, events } of outcome.parked) this.onParked(projection, events);
      }
      if (moved.length) for (const [p, position] of await this.checkpoints(moved, !pass.rebuilding)) next.set(p, position);
      at = next;
    }
    if (failure !== null) throw failure;
  }

  /** One transaction for the whole group; if it fails, one per projection, so that a broken
   * projection holds back only itself and is the one that reports. A projection that fails alone
   * on an error that would come back (see `deterministic`) applies the batch again event by event,
   * parking the events it cannot apply. */
  private async applyGroup(
    group: readonly Projection[],
    from: Position,
    read: Read,
    pass: Pass,
    eventByEvent = false,
    again = false,
  ): Promise<Outcome> {
    try {
      return await this.applyTogether(group, from, read, pass, eventByEvent);
    } catch (error) {
      // Rolled back: what the batch changed in a rebuild's memory did not happen in the tables.
      for (const p of group) pass.memory?.delete(p);
      if (group.length === 1) {
        if (!eventByEvent && deterministic(error)) return this.applyGroup(group, from, read, pass, true);
        // A rebuild replays each projection alone: its failed batch gets the second go, without the memory,
        // that a group's failed batch gives each of its projections.
        if (pass.rebuilding && !eventByEvent && !again) return this.applyGroup(group, from, read, pass, false, true);
        return { applied: [], moved: [], failure: error, parked: [] };
      }
      const outcome: Outcome = { applied: [], moved: [], failure: null, parked: [] };
      for (const projection of group) {
        const alone = await this.applyGroup([projection], from, read, pass);
        outcome.applied.push(...alone.applied);
        outcome.moved.push(...alone.moved);
        outcome.parked.push(...alone.parked);
        outcome.failure ??= alone.failure;
      }
      return outcome;
    }
  }

  private applyTogether(group: readonly Projection[], from: Position, read: Read, pass: Pass, eventByEvent: boolean): Promise<Outcome> {
    const to = read.events[read.events.length - 1]!.position;
    // Not durable: a batch lost with the database's last unflushed moments is applied again
    // from the log (its checkpoint is lost with it), and the WAL is flushed in order, so a
    // batch that survives a crash never survives without the events it was built from.
    return this.sql.transaction(async (tx) => {
      // One statement, rows in name order: instances locking overlapping groups cannot deadlock.
      const locked = await tx.query<CheckpointRow>(
        `${CHECKPOINT_ROWS} ORDER BY name FOR UPDATE`,
        [group.map((p) => p.name)],
      );
      const now = new Map(locked.map((r) => [r.name, checkpointRow(r)]));
      const outcome: Outcome = { applied: [], moved: [], failure: null, parked: [] };
      const ready: Projection[] = [];
      for (const p of group) {
        const row = now.get(p.name);
        if (row === undefined) continue;
        // A rebuild that started since this batch was read: moved, and left out when the checkpoints are read again.
        if (comparePositions(row.at, from) === 0 && (pass.rebuilding || !row.rebuilding)) ready.push(p);
        else outcome.moved.push(p);
      }
      if (ready.length === 0) return outcome;

      // A rebuild, a full batch (the runner is behind the log) or a busy gateway: the runner's throughput is what counts.
      const writes = pass.rebuilding ? LOAD : read.events.length < pass.batch && !this.busy() ? IN_SLICES : WHOLE;
      const followed = read.followed ? new Map(ready.map((p) => [p, read.followed!.get(p) ?? []])) : followedEvents(ready, read.events);
      const { clean, gap, parked } = await checkRevisions(tx, followed);
      outcome.failure = gap;
      for (const p of clean) {
        const events = followed.get(p)!;
        if (events.length === 0) continue;
        const parking = await applyParking(tx, p, events, parked.get(p), read.decoded, writes, eventByEvent, pass.memory?.get(p));
        if (parking.length) outcome.parked.push({ projection: p.name, events: parking });
      }
      if (clean.length)
        await tx.query(
          'UPDATE projection_checkpoints SET commit_position = $2::bigint, prepare_position = $3::bigint, updated_at = now() WHERE name = ANY($1::text[])',
          [clean.map((p) => p.name), String(to.commit), String(to.prepare)],
        );
      outcome.applied.push(...clean);
      return outcome;
    }, { durable: false });
  }

  /** Catches up until every projection has applied the log's current head, waiting for
   * events that older in-flight transactions still hide (operator commands, tests). A catch-up under
   * way runs to its end unless `stopAtDeadline` (the shutdown's): then it stops between batches once
   * `timeoutMs` is over, however far behind the log it is. */
  async catchUpToHead(timeoutMs = 30_000, stopAtDeadline = false): Promise<void> {
    // Commands this process has queued but not appended yet (settlements after an answer) belong to the head.
    await this.pendingAppends();
    const head = await this.store.headPosition();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.catchUp(stopAtDeadline ? () => Date.now() > deadline : undefined);
      if (this.reached(head)) return;
      if (Date.now() > deadline) throw new Error('projections did not reach the head of the log in time');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Empties the named projections' tables and replays the whole log into all of them in one pass:
   * each batch is read and decoded once (SharedReads) and each projection applies it in its own
   * transaction, in whole statements, at its own pace. Their secondary indexes are dropped with the
   * rows and built at the end (SecondaryIndex); what a projection would read back from its tables
   * batch after batch it keeps in memory (RebuildMemory). `onProgress` is told whenever the slowest
   * projection has applied another batch.
   */
  async rebuild(names: string | readonly string[], onProgress?: (progress: RebuildProgress) => void): Promise<void> {
    const projections = (typeof names === 'string' ? [names] : names).map((name) => this.byName(name));
    const named = projections.map((p) => p.name);
    const indexes = projections.flatMap((p) => p.secondaryIndexes ?? []);
    await this.sql.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM projection_checkpoints WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE', [named]);
      // One TRUNCATE for every table: no row-by-row delete of a large read model.
      await tx.query(`TRUNCATE ${projections.flatMap((p) => p.tables).join(', ')}`);
      const plain = indexes.filter((i) => i.drop === undefined);
      if (plain.length) await tx.query(`DROP INDEX IF EXISTS ${plain.map((i) => i.name).join(', ')}`);
      for (const statement of indexes.flatMap((i) => i.drop ?? [])) await tx.query(statement);
      await tx.query('DELETE FROM projection_stream_revisions WHERE projection = ANY($1::text[])', [named]);
      await tx.query('DELETE FROM projection_parked_events WHERE projection = ANY($1::text[])', [named]);
      await tx.query(
        `UPDATE projection_checkpoints SET commit_position = -1, prepare_position = -1, updated_at = now(), rebuild_until = now() + make_interval(secs => $2)
          WHERE name = ANY($1::text[])`,
        [named, REBUILD_LEASE_S],
      );
    });
    const lease = this.holdRebuildLease(named);
    for (const name of named) this.positions.delete(name);
    const head = await this.store.headPosition();
    // Each projection replays at its own pace; the progress told is the slowest one's.
    const done = new Map(projections.map((p) => [p, { events: 0, at: START }]));
    let toldEvents = 0;
    const told = (projection: Projection, count: number, at: Position) => {
      done.set(projection, { events: done.get(projection)!.events + count, at });
      let slowest = { events: Number.POSITIVE_INFINITY, at };
      for (const other of done.values()) if (other.events < slowest.events) slowest = other;
      if (slowest.events > toldEvents) onProgress?.({ events: (toldEvents = slowest.events), at: slowest.at, head });
    };
    const memory = new Map(projections.map((p) => [p, new RebuildMemory()]));
    let replayed = false;
    try {
      for (;;) {
        const reads = new SharedReads(this.store, this.rebuildBatch, projections);
        const replays = await Promise.allSettled(
          projections.map((p) =>
            this.advance([p], { batch: this.rebuildBatch, rebuilding: true, memory, reads: reads.reader(p), onBatch: (count, at) => told(p, count, at) }).finally(() =>
              reads.leave(p),
            ),
          ),
        );
        const failed = replays.find((replay) => replay.status === 'rejected');
        if (failed) throw failed.reason;
        if (named.every((name) => this.reachedBy(name, head))) break;
        // The head is committed but hidden behind an older transaction still in flight.
        await new Promise((r) => setTimeout(r, 20));
      }
      replayed = true;
    } finally {
      // Built even when the replay failed (the live runner goes on from where it stopped); its failure is the one told.
      try {
        await this.buildIndexes(indexes).catch((error: unknown) => {
          if (replayed) throw error;
        });
      } finally {
        // A release that fails (the database away) must not replace the rebuild's own outcome: the lease then
        // lapses by itself within REBUILD_LEASE_S, and the live runners take the projections up again.
        await lease.release().catch(() => undefined);
      }
    }
  }

  /** Renews the rebuild's claim on `names` until released; released, the other runners take them up again. */
  private holdRebuildLease(names: readonly string[]): { release: () => Promise<void> } {
    const renew = (seconds: number | null) =>
      this.sql.query('UPDATE projection_checkpoints SET rebuild_until = now() + make_interval(secs => $2) WHERE name = ANY($1::text[])', [names, seconds]);
    // A renewal that fails (the database away for a moment) is tried again at the next tick; the lease
    // outlives two missed ones.
    const timer = setInterval(() => void renew(REBUILD_LEASE_S).catch(() => {}), (REBUILD_LEASE_S * 1000) / 3);
    timer.unref();
    return {
      release: async () => {
        clearInterval(timer);
        await renew(null);
      },
    };
  }

  /** One sort each, with more memory for it than a session's default on Postgres, all at once: each on its
   * own connection (a database core each, and nothing else is left to do). */
  private async buildIndexes(indexes: readonly SecondaryIndex[]): Promise<void> {
    const built = await Promise.allSettled(
      indexes.map((index) =>
        this.sql.transaction(async (tx) => {
          if (this.sql.kind === 'postgres') await tx.query(`SET LOCAL maintenance_work_mem = '${INDEX_BUILD_MEMORY}'`);
          await tx.query(index.create);
        }),
      ),
    );
    const failed = built.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private reachedBy(name: string, position: Position): boolean {
    const at = this.positions.get(name);
    return at !== undefined && comparePositions(at, position) >= 0;
  }

  /** Parked events per projection, every projection named (0 when it has none). */
  parkedCounts(): Promise<Map<string, number>> {
    return parkedCounts(this.sql, this.projections.map((p) => p.name));
  }

  /** How far each projection is behind the log, from the checkpoints (src/projections/runner/lag.ts). */
  lag(): Promise<Map<string, ProjectionLag>> {
    return projectionLag(this.sql, this.store, this.projections.map((p) => p.name));
  }

  /** Every parked event, in log order. */
  parkedEvents(): Promise<ParkedEvent[]> {
    return parkedEvents(this.sql);
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
          // stop() is honoured between batches, however far behind the log the projections are.
          await this.catchUp(() => this.stopped);
          this.failure = null;
        } catch (error) {
          this.failure = error;
          for (const waiter of this.waiters) waiter.reject(error);
          this.waiters.clear();
          onError(error);
        }
        if (this.stopped) break;
        await new Promise<void>((resolve) => {
          // A runner that does not apply the log has nothing to look at until somebody waits (waitFor wakes it).
          const ms = this.failure ? 1000 : this.applies ? this.pollMs : this.waiters.size > 0 ? FOLLOW_WAITING_MS : null;
          const timer = ms === null ? undefined : setTimeout(done, ms);
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

function groupByPosition(at: ReadonlyMap<Projection, Position>): Map<Position, Projection[]> {
  const groups = new Map<string, { from: Position; group: Projection[] }>();
  for (const [projection, from] of at) {
    const key = `${from.commit}:${from.prepare}`;
    const entry = groups.get(key) ?? { from, group: [] };
    entry.group.push(projection);
    groups.set(key, entry);
  }
  return new Map([...groups.values()].map((g) => [g.from, g.group]));
}
