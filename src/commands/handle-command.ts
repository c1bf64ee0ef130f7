import { randomUUID } from 'node:crypto';
import { parse as parseUuid, v5 as uuidv5 } from 'uuid';
import { decodeRecorded, schemaVersion, type DomainEvent } from '../events/catalog';
import { ConcurrencyError, type AppendResult, type EventStore, type NewEvent, type Position, type RecordedEvent } from '../events/store/port';
import type { Decider, DomainError } from './decision';
import { decodeState, encodeState } from './snapshot/codec';
import type { SnapshotStore } from './snapshot/store';

/** Snapshots of a handler's streams (src/commands/snapshot): where, which version, how often. */
export interface Snapshotting {
  readonly store: SnapshotStore;
  /** stateVersion(...) of the aggregate: a snapshot of another version is ignored. */
  readonly version: string;
  /** A snapshot is taken once a stream has this many events past its last one. */
  readonly every: bigint;
  /** Told when a snapshot could not be written or read (the stream is then read from its start). */
  readonly onError?: (error: unknown, streamId: string) => void;
}

/** As bytes: `uuid` would parse the text form again for every id. */
const EVENT_ID_NAMESPACE = parseUuid('6f1d3c1e-2b7a-4c55-9d0e-3f6a8b9c0d21');

/** Event ids derive from the command id, so a retried command appends the same ids
 * and the store recognises the retry as a duplicate instead of charging twice. (The name
 * goes in as UTF-8 bytes: the same id as the string, without uuid's slower conversion.) */
export const eventIdFor = (commandId: string, index: number) => uuidv5(Buffer.from(`${commandId}#${index}`), EVENT_ID_NAMESPACE);

export interface Loaded<S> {
  readonly revision: bigint; // -1n: no stream
  readonly state: S;
}

/** A cached state knows the id of the event it was folded up to: the revision alone does not
 * tell the stream it was folded from, once a database crash has lost events and another
 * writer has appended at their revisions. */
interface Cached<S> extends Loaded<S> {
  readonly lastId: string | null;
}

export type Handled<S> =
  | { ok: true; state: S; revision: bigint; position: Position | null; events: readonly DomainEvent[]; duplicate: boolean }
  | { ok: false; error: DomainError };

export interface HandleOptions<S = unknown> {
  /** Makes the command idempotent; a random id is used when absent. */
  readonly commandId?: string;
  readonly metadata?: Record<string, unknown>;
  /** false: the append may return before the database has flushed it (see AppendOptions). */
  readonly durable?: boolean;
  /** Nobody waits for this command (a settlement after the answer was sent): it may wait
   * up to LINGER_MS for other commands of its stream, to share their append. */
  readonly deferrable?: boolean;
  /**
   * Called (at most once) with the state after the command when it has been decided on this
   * process's state of a stream that no other process has written for TRUSTED_AFTER_MS, as its
   * append leaves: work that needs only the decision may start while the commit is under way.
   * The promise of `handle` stays the final word (a conflict can still turn the decision over).
   */
  readonly onDecided?: (state: S) => void;
}

const MAX_CONFLICT_RETRIES = 25;
/** Events read from a stream at a time when it is read from its start or a snapshot. */
const READ_PAGE = 5000;
const CACHE_LIMIT = 10_000;
/** Commands decided and appended together at most. */
const MAX_BATCH = 256;
/** How long a deferrable command waits for company before it is appended alone. */
const LINGER_MS = 2;
/** How long after another process was last seen writing a stream its cached state is no
 * longer trusted for early decisions (onDecided). */
const TRUSTED_AFTER_MS = 60_000;

interface CommandJob<C, S> {
  readonly kind: 'command';
  readonly command: C;
  readonly options: HandleOptions<S>;
  readonly commandId: string;
  /** onDecided has been called. */
  told?: boolean;
  /** Decided ahead of its round (while the round before was in flight): on which state, and
   * what it gave. The round reuses it when it starts from that very state. */
  ahead?: { readonly from: S; readonly events: readonly DomainEvent[]; readonly state: S };
  resolve(handled: Handled<S>): void;
  reject(error: unknown): void;
}

interface LoadJob<S> {
  readonly kind: 'load';
  resolve(loaded: Loaded<S>): void;
  reject(error: unknown): void;
}

type Job<C, S> = CommandJob<C, S> | LoadJob<S>;

/** The commands and reads waiting for one stream, run in arrival order. */
interface Lane<C, S> {
  readonly jobs: Job<C, S>[];
  busy: boolean;
  linger: NodeJS.Timeout | null;
  /** While a round's append is in flight: the state after it and after every command queued
   * since, each decided on arrival exactly as the next round will decide it if the append
   * commits. null when unknown (no round in flight, or a queued command was refused). */
  ahead: S | null;
}

type Outcome<S> = { ok: true; state: S; revision: bigint; events: readonly DomainEvent[] } | { ok: false; error: DomainError; commandId: string | undefined };

/**
 * Loads an aggregate, decides, appends with the expected revision, and retries on a
 * conflict. Commands for one stream run in arrival order in this process (a lane per
 * stream), and the folded state is cached with its revision, so a hot wallet is read
 * forward from where it was, not replayed, and rarely conflicts with itself.
 *
 * Group commit: while one append of a stream is in flight, the commands that arrive
 * queue up; the next round decides all of them on the cached state, one after the
 * other, and appends their events in one statement. One database round trip (and at
 * most one WAL flush) then serves many calls of a busy wallet.
 */
export class CommandHandler<C, S, E extends DomainEvent> {
  private readonly cache = new Map<string, Cached<S>>();
  /** When each cached state was last known to match the store (ms, performance.now()). */
  private readonly checkedAt = new Map<string, number>();
  private readonly lanes = new Map<string, Lane<C, S>>();
  /** When another process was last seen writing each stream (ms, performance.now()). */
  private readonly foreignWriteAt = new Map<string, number>();
  private idleWaiters: Array<() => void> = [];

  /** The revision of each cached stream's latest snapshot known to this process. */
  private readonly snapshotAt = new Map<string, bigint>();

  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<C, S, E>,
    /** Streams whose state is kept (least recently used forgotten first): fewer for large states. */
    private readonly cacheLimit = CACHE_LIMIT,
    private readonly snapshots: Snapshotting | null = null,
  ) {
    // The database may have lost events this cache was folded from (see Sql.onReset).
    store.onReset?.(() => this.forget());
  }

  /** Drops every cached state: each stream is read again from the log when next needed. */
  forget(): void {
    this.cache.clear();
    this.checkedAt.clear();
  }

  /**
   * The stream folded from the log alone, for a decision that must not rest on this process's
   * cache (the hold sweeper's): reads the whole stream, neither reads nor changes the cache, and
   * waits for no queued command (a command still decides on the state its lane sees).
   */
  async fromLog(streamId: string): Promise<Loaded<S>> {
    return this.foldForward(streamId, { revision: -1n, state: this.decider.initialState, lastId: null });
  }

  /** Current state, read forward from the cached revision after every command queued
   * before it: real time, never a projection. */
  load(streamId: string): Promise<Loaded<S>> {
    return new Promise((resolve, reject) => this.enqueue(streamId, { kind: 'load', resolve, reject }, false));
  }

  /**
   * The cached state when it was checked against the store less than `maxAgeMs` ago,
   * without waiting for queued commands; else a real `load`. For checks that a later
   * decision repeats on fresh state anyway (authentication before a reservation).
   */
  recent(streamId: string, maxAgeMs: number): Promise<Loaded<S>> | Loaded<S> {
    return this.fresh(streamId, maxAgeMs) ?? this.load(streamId);
  }

  /** The cached state when it was checked against the store less than `maxAgeMs` ago. */
  fresh(streamId: string, maxAgeMs: number): Loaded<S> | undefined {
    const cached = this.cache.get(streamId);
    const at = this.checkedAt.get(streamId);
    return cached && at !== undefined && performance.now() - at <= maxAgeMs ? cached : undefined;
  }

  handle(streamId: string, command: C, options: HandleOptions<S> = {}): Promise<Handled<S>> {
    const commandId = options.commandId ?? randomUUID();
    return new Promise((resolve, reject) =>
      this.enqueue(streamId, { kind: 'command', command, options, commandId, resolve, reject }, options.deferrable === true),
    );
  }

  /** Resolves when no command or read is queued or running for any stream. */
  idle(): Promise<void> {
    if (this.lanes.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private enqueue(streamId: string, job: Job<C, S>, deferrable: boolean) {
    let lane = this.lanes.get(streamId);
    if (!lane) {
      lane = { jobs: [], busy: false, linger: null, ahead: null };
      this.lanes.set(streamId, lane);
    }
    lane.jobs.push(job);
    if (lane.busy) {
      if (job.kind === 'command') this.decideAhead(streamId, lane, job);
      return;
    }
    if (deferrable) {
      if (!lane.linger) {
        const waiting = lane;
        lane.linger = setTimeout(() => this.drain(streamId, waiting), LINGER_MS);
      }
      return;
    }
    this.drain(streamId, lane);
  }

  private drain(streamId: string, lane: Lane<C, S>) {
    if (lane.linger) clearTimeout(lane.linger);
    lane.linger = null;
    if (lane.busy) return;
    lane.busy = true;
    void (async () => {
      while (lane.jobs.length > 0) {
        const first = lane.jobs[0]!;
        if (first.kind === 'load') {
          // Reads waiting together share one read forward (a cache that went stale under load
          // has every request in flight asking for it at once).
          let n = 1;
          while (n < lane.jobs.length && lane.jobs[n]!.kind === 'load') n++;
          const loads = lane.jobs.splice(0, n) as LoadJob<S>[];
          await this.refresh(streamId).then(
            (loaded) => loads.forEach((job) => job.resolve(loaded)),
            (error: unknown) => loads.forEach((job) => job.reject(error)),
          );
          continue;
        }
        let n = 1;
        while (n < lane.jobs.length && n < MAX_BATCH && lane.jobs[n]!.kind === 'command') n++;
        const batch = lane.jobs.splice(0, n) as CommandJob<C, S>[];
        if (batch.length === 1) await this.run(streamId, batch[0]!, lane).then(batch[0]!.resolve, batch[0]!.reject);
        // A bug in a decider must fail its callers, not leave the lane busy for ever.
        else await this.runBatch(streamId, batch, lane).catch((error: unknown) => batch.forEach((job) => job.reject(error)));
        lane.ahead = null;
      }
      lane.busy = false;
      this.lanes.delete(streamId);
      if (this.lanes.size === 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    })();
  }

  private newEvents(job: CommandJob<C, S>, events: readonly DomainEvent[]): NewEvent[] {
    return events.map((event, i) => ({
      id: eventIdFor(job.commandId, i),
      type: event.type,
      data: event.data,
      // The command's own fields first: V8 builds `{ ...x, newField }` through a slow path (about a
      // microsecond a field), `{ field, ...x }` through the fast one.
      metadata: { command_id: job.commandId, schema_version: schemaVersion(event.type), ...job.options.metadata },
    }));
  }

  /** A round's append is in flight: what is queued behind it is decided on the state it leads to. */
  private lookAhead(streamId: string, lane: Lane<C, S>, state: S) {
    lane.ahead = state;
    for (const job of lane.jobs) if (job.kind === 'command') this.decideAhead(streamId, lane, job);
  }

  /** The append's result; anything but a plain success voids the decisions made ahead of it. */
  private async committed(appending: Promise<AppendResult>, lane: Lane<C, S> | undefined): Promise<AppendResult> {
    try {
      const result = await appending;
      if (result.duplicate && lane) lane.ahead = null;
      return result;
    } catch (error) {
      if (lane) lane.ahead = null;
      throw error;
    }
  }

  /** A command queued behind a round in flight, decided on the state that round leads to: a
   * caller waiting for onDecided need not wait for the round's commit as well. */
  private decideAhead(streamId: string, lane: Lane<C, S>, job: CommandJob<C, S>) {
    if (lane.ahead === null) return;
    const from: S = lane.ahead;
    const decision = this.decider.decide(job.command, from);
    if (!decision.ok) {
      // What follows a refusal is left to the round, which may see it otherwise (a fresh read).
      lane.ahead = null;
      return;
    }
    let state = from;
    for (const event of decision.events) state = this.decider.evolve(state, event as E);
    lane.ahead = state;
    job.ahead = { from, events: decision.events, state };
    if (decision.events.length > 0) this.tell(streamId, job, state);
  }

  private async run(streamId: string, job: CommandJob<C, S>, lane?: Lane<C, S>): Promise<Handled<S>> {
    const { command, options, commandId } = job;
    // Optimistic: decide on the cached state and let the expected revision catch a
    // stale cache (another instance wrote); read forward only then, or before a refusal.
    const cached = this.cache.get(streamId);
    let loaded = cached ?? (await this.refresh(streamId));
    let fresh = cached === undefined;
    for (let attempt = 0; ; attempt++) {
      // Decided ahead on exactly this state (the round before committed as expected): the same decision.
      const ahead = job.ahead?.from === loaded.state ? job.ahead : undefined;
      const decision = ahead ? { ok: true as const, events: ahead.events } : this.decider.decide(command, loaded.state);
      if (!decision.ok) {
        if (!fresh) {
          loaded = await this.refresh(streamId);
          fresh = true;
          continue;
        }
        if (options.commandId && (await this.alreadyApplied(streamId, commandId))) {
          return { ok: true, state: loaded.state, revision: loaded.revision, position: null, events: [], duplicate: true };
        }
        return { ok: false, error: decision.error };
      }
      if (decision.events.length === 0) {
        return { ok: true, state: loaded.state, revision: loaded.revision, position: null, events: [], duplicate: false };
      }
      const state = ahead ? ahead.state : decision.events.reduce((s, e) => this.decider.evolve(s, e as E), loaded.state);
      const events = this.newEvents(job, decision.events);
      try {
        const appending = this.store.append(streamId, events, loaded.revision === -1n ? 'no_stream' : loaded.revision, {
          durable: options.durable !== false,
          // One object of a fixed shape on the hot path, not a conditional spread.
          expectedEventId: loaded.lastId ?? undefined,
        });
        this.tell(streamId, job, state);
        if (lane) this.lookAhead(streamId, lane, state);
        const result = await this.committed(appending, lane);
        if (result.duplicate) {
          this.drop(streamId);
          const reloaded = await this.refresh(streamId);
          return { ok: true, state: reloaded.state, revision: reloaded.revision, position: result.position, events: [], duplicate: true };
        }
        this.remember(streamId, { revision: result.nextRevision, state, lastId: events[events.length - 1]!.id });
        return { ok: true, state, revision: result.nextRevision, position: result.position, events: decision.events, duplicate: false };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= MAX_CONFLICT_RETRIES) throw error;
        // Another process wrote to the stream: read forward and decide again.
        loaded = await this.afterConflict(streamId, error);
        fresh = true;
      }
    }
  }

  /**
   * Decides a batch in order on the cached state and appends all its events at once.
   * A refusal on a state that may be stale, a conflict, or anything unusual sends the
   * batch back through a read forward; a duplicate append falls back to one command
   * at a time, where the single path tells which command was the retry.
   */
  private async runBatch(streamId: string, batch: readonly CommandJob<C, S>[], lane: Lane<C, S>): Promise<void> {
    const cached = this.cache.get(streamId);
    let loaded: Cached<S>;
    try {
      loaded = cached ?? (await this.refresh(streamId));
    } catch (error) {
      for (const job of batch) job.reject(error);
      return;
    }
    let fresh = cached === undefined;
    for (let attempt = 0; ; attempt++) {
      let state = loaded.state;
      let revision = loaded.revision;
      const outcomes: Outcome<S>[] = [];
      const events: NewEvent[] = [];
      let stale = false;
      for (const job of batch) {
        // Decided ahead on exactly this state (the round before committed as expected): the same decision.
        const ahead = job.ahead?.from === state ? job.ahead : undefined;
        if (ahead) {
          events.push(...this.newEvents(job, ahead.events));
          state = ahead.state;
          revision += BigInt(ahead.events.length);
          outcomes.push({ ok: true, state, revision, events: ahead.events });
          continue;
        }
        const decision = this.decider.decide(job.command, state);
        if (!decision.ok) {
          if (!fresh) {
            stale = true;
            break;
          }
          outcomes.push({ ok: false, error: decision.error, commandId: job.options.commandId });
          continue;
        }
        events.push(...this.newEvents(job, decision.events));
        for (const event of decision.events) state = this.decider.evolve(state, event as E);
        revision += BigInt(decision.events.length);
        outcomes.push({ ok: true, state, revision, events: decision.events });
      }
      try {
        if (stale) {
          loaded = await this.refresh(streamId);
          fresh = true;
          continue;
        }
        let position: Position | null = null;
        if (events.length > 0) {
          const appending = this.store.append(streamId, events, loaded.revision === -1n ? 'no_stream' : loaded.revision, {
            durable: batch.some((job) => job.options.durable !== false),
            expectedEventId: loaded.lastId ?? undefined,
          });
          batch.forEach((job, i) => {
            const outcome = outcomes[i]!;
            if (outcome.ok && outcome.events.length > 0) this.tell(streamId, job, outcome.state);
          });
          this.lookAhead(streamId, lane, state);
          const result = await this.committed(appending, lane);
          if (result.duplicate) return await this.oneByOne(streamId, batch);
          this.remember(streamId, { revision: result.nextRevision, state, lastId: events[events.length - 1]!.id });
          position = result.position;
        }
        for (let i = 0; i < batch.length; i++) {
          const job = batch[i]!;
          const outcome = outcomes[i]!;
          if (outcome.ok)
            job.resolve({ ok: true, state: outcome.state, revision: outcome.revision, position: outcome.events.length > 0 ? position : null, events: outcome.events, duplicate: false });
          else if (outcome.commandId && (await this.alreadyApplied(streamId, outcome.commandId)))
            job.resolve({ ok: true, state, revision: this.cache.get(streamId)?.revision ?? revision, position: null, events: [], duplicate: true });
          else job.resolve({ ok: false, error: outcome.error });
        }
        return;
      } catch (error) {
        if (error instanceof ConcurrencyError && attempt < MAX_CONFLICT_RETRIES) {
          try {
            loaded = await this.afterConflict(streamId, error);
          } catch (readError) {
            for (const job of batch) job.reject(readError);
            return;
          }
          fresh = true;
          continue;
        }
        if (error instanceof ConcurrencyError) {
          for (const job of batch) job.reject(error);
          return;
        }
        return await this.oneByOne(streamId, batch);
      }
    }
  }

  private async oneByOne(streamId: string, batch: readonly CommandJob<C, S>[]) {
    this.drop(streamId);
    for (const job of batch) await this.run(streamId, job).then(job.resolve, job.reject);
  }

  /** A conflict whose stream is behind the cache, or holds another event at the cached revision
   * (the database lost its newest commits in a crash, and maybe someone appended at their
   * revisions since), must not be read forward from the cache: start again from the stream. */
  private async afterConflict(streamId: string, error: ConcurrencyError): Promise<Cached<S>> {
    this.sawForeignWrite(streamId);
    const cached = this.cache.get(streamId);
    if (cached && (error.actual === 'no_stream' || error.actual <= cached.revision)) this.drop(streamId);
    return this.refresh(streamId);
  }

  /**
   * The cached state read forward to the end of the stream. The read starts at the cached
   * revision itself (the same round trip, one event more): the event there must be the one the
   * cache was folded up to. Another event there, or none, means the database lost events this
   * process saw and the cache describes a stream that does not exist: it is dropped and the
   * whole stream read again.
   */
  private async refresh(streamId: string): Promise<Cached<S>> {
    const checked = performance.now();
    const cached = this.cache.get(streamId);
    if (cached) {
      const read = await this.store.readStream(streamId, { fromRevision: cached.revision });
      const [at] = read;
      if (at !== undefined && at.revision === cached.revision && at.id === cached.lastId) {
        if (read.length === 1) {
          this.checkedAt.set(streamId, checked);
          return cached;
        }
        // Events this process did not append (its cache is kept in step with its own appends).
        this.sawForeignWrite(streamId);
        const loaded = this.fold(cached, read.slice(1));
        this.remember(streamId, loaded, checked);
        return loaded;
      }
      this.drop(streamId);
      this.sawForeignWrite(streamId);
    }
    const loaded = (await this.fromSnapshot(streamId)) ?? (await this.foldForward(streamId, { revision: -1n, state: this.decider.initialState, lastId: null }));
    if (loaded.revision >= 0n) this.remember(streamId, loaded, checked);
    return loaded;
  }

  /**
   * The stream's latest snapshot read forward to the end of the stream: the read starts at the
   * snapshot's revision, whose event must be the one it was taken at (as a cached state's). A
   * snapshot of another version, unreadable, or of a stream the log no longer holds is ignored:
   * undefined, and the stream is read from its start.
   */
  private async fromSnapshot(streamId: string): Promise<Cached<S> | undefined> {
    if (!this.snapshots) return undefined;
    const { store, version, onError } = this.snapshots;
    let state: S;
    let snapshot;
    try {
      snapshot = await store.load(streamId);
      if (!snapshot || snapshot.version !== version) return undefined;
      state = decodeState(snapshot.state) as S;
    } catch (error) {
      onError?.(error, streamId);
      return undefined;
    }
    const read = await this.store.readStream(streamId, { fromRevision: snapshot.revision, maxCount: READ_PAGE });
    const [at] = read;
    if (at === undefined || at.revision !== snapshot.revision || at.id !== snapshot.eventId) return undefined;
    this.snapshotAt.set(streamId, snapshot.revision);
    const loaded = this.fold({ revision: snapshot.revision, state, lastId: snapshot.eventId }, read.slice(1));
    return read.length < READ_PAGE ? loaded : this.foldForward(streamId, loaded);
  }

  /** `from` read forward to the end of the stream a page at a time: a long stream (read before
   * its first snapshot) is never held in memory whole. */
  private async foldForward(streamId: string, from: Cached<S>): Promise<Cached<S>> {
    let loaded = from;
    for (;;) {
      const page = await this.store.readStream(streamId, { fromRevision: loaded.revision + 1n, maxCount: READ_PAGE });
      loaded = this.fold(loaded, page);
      if (page.length < READ_PAGE) return loaded;
    }
  }

  /** Takes a snapshot of a state this process holds once its stream is `every` events past the last
   * one; not awaited (a snapshot is a cache: one that fails to be written costs a longer read later). */
  private snapshotIfDue(streamId: string, loaded: Cached<S>) {
    if (!this.snapshots || loaded.lastId === null) return;
    const { store, version, every, onError } = this.snapshots;
    const last = this.snapshotAt.get(streamId) ?? -1n;
    if (loaded.revision - last < every) return;
    this.snapshotAt.set(streamId, loaded.revision);
    let state: unknown;
    try {
      state = encodeState(loaded.state);
    } catch (error) {
      onError?.(error, streamId);
      return;
    }
    store.save(streamId, { revision: loaded.revision, eventId: loaded.lastId, version, state }).catch((error: unknown) => {
      if (this.snapshotAt.get(streamId) === loaded.revision) this.snapshotAt.delete(streamId);
      onError?.(error, streamId);
    });
  }

  private fold(from: Cached<S>, events: readonly RecordedEvent[]): Cached<S> {
    let { state, revision, lastId } = from;
    for (const recorded of events) {
      state = this.decider.evolve(state, decodeRecorded(recorded) as E);
      revision = recorded.revision;
      lastId = recorded.id;
    }
    return { revision, state, lastId };
  }

  private drop(streamId: string) {
    this.cache.delete(streamId);
    this.checkedAt.delete(streamId);
    this.snapshotAt.delete(streamId);
  }

  /** Early word of a decision (HandleOptions.onDecided), only on a stream this process alone writes lately. */
  private tell(streamId: string, job: CommandJob<C, S>, state: S) {
    if (job.told || !job.options.onDecided) return;
    const at = this.foreignWriteAt.get(streamId);
    if (at !== undefined) {
      if (performance.now() - at < TRUSTED_AFTER_MS) return;
      this.foreignWriteAt.delete(streamId);
    }
    job.told = true;
    job.options.onDecided(state);
  }

  private sawForeignWrite(streamId: string) {
    this.foreignWriteAt.delete(streamId);
    this.foreignWriteAt.set(streamId, performance.now());
    if (this.foreignWriteAt.size > CACHE_LIMIT) this.foreignWriteAt.delete(this.foreignWriteAt.keys().next().value as string);
  }

  /** A refused command whose events are already in the stream was a retry of one that succeeded. */
  private async alreadyApplied(streamId: string, commandId: string): Promise<boolean> {
    const firstId = eventIdFor(commandId, 0);
    const tail = await this.store.readStream(streamId, { direction: 'backwards', maxCount: 200 });
    return tail.some((event) => event.id === firstId);
  }

  private remember(streamId: string, loaded: Cached<S>, checked = performance.now()) {
    this.cache.delete(streamId);
    this.cache.set(streamId, loaded);
    this.checkedAt.set(streamId, checked);
    if (this.cache.size > this.cacheLimit) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
      this.checkedAt.delete(oldest);
      this.snapshotAt.delete(oldest);
    }
    this.snapshotIfDue(streamId, loaded);
  }
}
