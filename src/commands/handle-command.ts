import { randomUUID } from 'node:crypto';
import { parse as parseUuid, v5 as uuidv5 } from 'uuid';
import { schemaVersion, type DomainEvent } from '../events/catalog';
import { ConcurrencyError, type AppendResult, type EventStore, type NewEvent, type Position } from '../events/store/port';
import type { Decider, DomainError } from './decision';
import { Lanes, type Lane } from './lanes';
import { decideOne, decideRound, type Decided, type Round } from './round';
import { CACHE_LIMIT, StreamCache, type Cached, type Loaded, type Snapshotting } from './stream-cache';

/** As bytes: `uuid` would parse the text form again for every id. */
const EVENT_ID_NAMESPACE = parseUuid('6f1d3c1e-2b7a-4c55-9d0e-3f6a8b9c0d21');

/** Event ids derive from the command id, so a retried command appends the same ids
 * and the store recognises the retry as a duplicate instead of charging twice. (The name
 * goes in as UTF-8 bytes: the same id as the string, without uuid's slower conversion.) */
export const eventIdFor = (commandId: string, index: number) => uuidv5(Buffer.from(`${commandId}#${index}`), EVENT_ID_NAMESPACE);

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
   * up to LINGER_MS (lanes.ts) for other commands of its stream, to share their append. */
  readonly deferrable?: boolean;
  /**
   * Called (at most once) with the state after the command when it has been decided on this
   * process's state of a stream that no other process has written for TRUSTED_AFTER_MS
   * (stream-cache.ts), as its append leaves: work that needs only the decision may start while
   * the commit is under way.
   * The promise of `handle` stays the final word (a conflict can still turn the decision over).
   */
  readonly onDecided?: (state: S) => void;
}

const MAX_CONFLICT_RETRIES = 25;

interface CommandJob<C, S, E extends DomainEvent> {
  readonly kind: 'command';
  readonly command: C;
  readonly options: HandleOptions<S>;
  readonly commandId: string;
  /** onDecided has been called. */
  told?: boolean;
  /** Decided ahead of its round (while the round before was in flight): on which state, and
   * what it gave. The round reuses it when it starts from that very state. */
  ahead?: Decided<S, E>;
  resolve(handled: Handled<S>): void;
  reject(error: unknown): void;
}

interface LoadJob<S> {
  readonly kind: 'load';
  resolve(loaded: Loaded<S>): void;
  reject(error: unknown): void;
}

type StreamLane<C, S, E extends DomainEvent> = Lane<CommandJob<C, S, E>, LoadJob<S>, S>;

const NO_COMMANDS: readonly never[] = [];
const NO_READS: readonly never[] = [];

/**
 * Loads an aggregate, decides, appends with the expected revision, and retries on a
 * conflict. Commands for one stream run in arrival order in this process (`Lanes`), and the
 * folded state is cached with its revision (`StreamCache`), so a hot wallet is read forward
 * from where it was, not replayed, and rarely conflicts with itself.
 *
 * Group commit: while one append of a stream is in flight, the commands that arrive
 * queue up; the next round decides all of them on the cached state, one after the
 * other (`decideRound`), and appends their events in one statement. One database round
 * trip (and at most one WAL flush) then serves many calls of a busy wallet. A lone
 * command is a round of one.
 */
export class CommandHandler<C, S, E extends DomainEvent> {
  private readonly streams: StreamCache<S, E>;
  private readonly lanes: Lanes<CommandJob<C, S, E>, LoadJob<S>, S>;

  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<C, S, E>,
    /** Streams whose state is kept (least recently used forgotten first): fewer for large states. */
    cacheLimit = CACHE_LIMIT,
    snapshots: Snapshotting | null = null,
  ) {
    this.streams = new StreamCache(store, decider, cacheLimit, snapshots);
    // Bound once here: a lane calls these for every read and round, and must not allocate to do so.
    this.lanes = new Lanes({
      read: (streamId, loads) => this.round(streamId, NO_COMMANDS, loads),
      round: (streamId, commands, lane) => this.round(streamId, commands, NO_READS, lane),
      queuedBehind: (streamId, lane, job) => this.decideAhead(streamId, lane, job),
    });
  }

  /** Drops every cached state: each stream is read again from the log when next needed. */
  forget(): void {
    this.streams.forget();
  }

  /**
   * The stream folded from the log alone, for a decision that must not rest on this process's
   * cache (the hold sweeper's): reads the whole stream, neither reads nor changes the cache, and
   * waits for no queued command (a command still decides on the state its lane sees).
   */
  fromLog(streamId: string): Promise<Loaded<S>> {
    return this.streams.fromLog(streamId);
  }

  /** Current state, read forward from the cached revision after every command queued
   * before it: real time, never a projection. */
  load(streamId: string): Promise<Loaded<S>> {
    return new Promise((resolve, reject) => this.lanes.enqueue(streamId, { kind: 'load', resolve, reject }, false));
  }

  /**
   * The cached state when it was checked against the store less than `maxAgeMs` ago,
   * without waiting for queued commands; else a real `load`. For checks that a later
   * decision repeats on fresh state anyway (authentication before a reservation).
   */
  recent(streamId: string, maxAgeMs: number): Promise<Loaded<S>> | Loaded<S> {
    return this.streams.fresh(streamId, maxAgeMs) ?? this.load(streamId);
  }

  /** The cached state when it was checked against the store less than `maxAgeMs` ago. */
  fresh(streamId: string, maxAgeMs: number): Loaded<S> | undefined {
    return this.streams.fresh(streamId, maxAgeMs);
  }

  handle(streamId: string, command: C, options: HandleOptions<S> = {}): Promise<Handled<S>> {
    const commandId = options.commandId ?? randomUUID();
    return new Promise((resolve, reject) =>
      this.lanes.enqueue(streamId, { kind: 'command', command, options, commandId, resolve, reject }, options.deferrable === true),
    );
  }

  /** Reads from far back stop at their next page from now on (StreamCache.stopLongReads). */
  stopLongReads(): void {
    this.streams.stopLongReads();
  }

  /** Resolves when the snapshots being taken now are written (the snapshot backfill waits for its own). */
  snapshotsSaved(): Promise<void> {
    return this.streams.saved();
  }

  /** Resolves when no command or read is queued or running for any stream. */
  idle(): Promise<void> {
    return this.lanes.idle();
  }

  /**
   * A round of a stream's lane: the reads at its head answered with the stream read forward, or
   * the commands at its head decided together and appended at once. Optimistic: commands are
   * decided on the cached state and the expected revision catches a cache that another process
   * made stale; the stream is read forward only then, before a refusal (which is only given on a
   * state just read), or when nothing is cached. A conflict reads forward and decides again; a
   * retried append of a round of one answers as the stream is; a round of several that goes
   * wrong otherwise goes again one command at a time, where each is told apart.
   */
  private async round(streamId: string, commands: readonly CommandJob<C, S, E>[], reads: readonly LoadJob<S>[], lane?: StreamLane<C, S, E>): Promise<void> {
    let loaded = reads.length > 0 ? undefined : this.streams.get(streamId);
    let fresh = false;
    /** A round of one whose append the store already had: answered once the stream is read again. */
    let retried: Position | null = null;
    for (let attempt = 0; ; attempt++) {
      if (loaded === undefined) {
        // The one place a stream is read forward: for reads, for commands when nothing is cached,
        // after a refusal on the cached state, after a conflict, and after a retried append.
        try {
          loaded = await this.streams.refresh(streamId);
        } catch (error) {
          for (const job of reads) job.reject(error);
          for (const job of commands) job.reject(error);
          return;
        }
        fresh = true;
      }
      if (reads.length > 0) {
        for (const job of reads) job.resolve(loaded);
        return;
      }
      if (retried !== null) {
        commands[0]!.resolve({ ok: true, state: loaded.state, revision: loaded.revision, position: retried, events: [], duplicate: true });
        return;
      }
      const round = decideRound(this.decider, loaded, commands, fresh);
      if (round.stale) {
        loaded = undefined;
        continue;
      }
      try {
        let position: Position | null = null;
        if (round.appends > 0) {
          const result = await this.append(streamId, loaded, commands, round, lane);
          if (result.duplicate && commands.length > 1) return await this.oneByOne(streamId, commands);
          if (result.duplicate) {
            this.streams.drop(streamId);
            retried = result.position;
            loaded = undefined;
            continue;
          }
          position = result.position;
        }
        for (let i = 0; i < commands.length; i++) {
          const job = commands[i]!;
          const outcome = round.outcomes[i]!;
          if (outcome.ok)
            job.resolve({ ok: true, state: outcome.state, revision: outcome.revision, position: outcome.events.length > 0 ? position : null, events: outcome.events, duplicate: false });
          else if (job.options.commandId && (await this.alreadyApplied(streamId, job.commandId)))
            job.resolve({ ok: true, state: round.state, revision: round.revision, position: null, events: [], duplicate: true });
          else job.resolve({ ok: false, error: outcome.error });
        }
        return;
      } catch (error) {
        if (error instanceof ConcurrencyError && attempt < MAX_CONFLICT_RETRIES) {
          // Another process wrote to the stream: read forward and decide again.
          this.streams.conflicted(streamId, error);
          loaded = undefined;
          continue;
        }
        // Anything but a conflict may be one command's fault (an event the store would not take):
        // a round of several goes again one command at a time, so that only that one fails.
        if (!(error instanceof ConcurrencyError) && commands.length > 1) return await this.oneByOne(streamId, commands);
        for (const job of commands) job.reject(error);
        return;
      }
    }
  }

  /** Each command of a round again as a round of one: after a retried append, the round of one
   * tells which command was the retry; after an unusual error, which command it was for. */
  private async oneByOne(streamId: string, commands: readonly CommandJob<C, S, E>[]) {
    this.streams.drop(streamId);
    for (const job of commands) {
      try {
        await this.round(streamId, [job], NO_READS);
      } catch (error) {
        job.reject(error);
      }
    }
  }

  /**
   * Appends a round's events, expecting the revision and the event it was decided on. As the
   * append leaves, callers waiting for onDecided hear their decisions, and what queued behind it is
   * decided ahead on the state it leads to; anything but a plain success voids those decisions.
   */
  private async append(streamId: string, loaded: Cached<S>, commands: readonly CommandJob<C, S, E>[], round: Round<S, E>, lane: StreamLane<C, S, E> | undefined) {
    const events: NewEvent[] = [];
    let durable = false;
    for (let i = 0; i < commands.length; i++) {
      const job = commands[i]!;
      const outcome = round.outcomes[i]!;
      if (job.options.durable !== false) durable = true;
      if (outcome.ok) this.newEvents(events, job, outcome.events);
    }
    const appending = this.store.append(streamId, events, loaded.revision === -1n ? 'no_stream' : loaded.revision, {
      durable,
      // One object of a fixed shape on the hot path, not a conditional spread.
      expectedEventId: loaded.lastId ?? undefined,
    });
    for (let i = 0; i < commands.length; i++) {
      const outcome = round.outcomes[i]!;
      if (outcome.ok && outcome.events.length > 0) this.tell(streamId, commands[i]!, outcome.state);
    }
    if (lane) this.lookAhead(streamId, lane, round.state);
    let result: AppendResult;
    try {
      result = await appending;
    } catch (error) {
      if (lane) lane.ahead = null;
      throw error;
    }
    if (result.duplicate) {
      if (lane) lane.ahead = null;
    } else this.streams.remember(streamId, { revision: result.nextRevision, state: round.state, lastId: events[events.length - 1]!.id });
    return result;
  }

  private newEvents(into: NewEvent[], job: CommandJob<C, S, E>, events: readonly DomainEvent[]) {
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      into.push({
        id: eventIdFor(job.commandId, i),
        type: event.type,
        data: event.data,
        // The command's own fields first: V8 builds `{ ...x, newField }` through a slow path (about a
        // microsecond a field), `{ field, ...x }` through the fast one.
        metadata: { command_id: job.commandId, schema_version: schemaVersion(event.type), ...job.options.metadata },
      });
    }
  }

  /** A round's append is in flight: what is queued behind it is decided on the state it leads to. */
  private lookAhead(streamId: string, lane: StreamLane<C, S, E>, state: S) {
    lane.ahead = state;
    for (const job of lane.jobs) if (job.kind === 'command') this.decideAhead(streamId, lane, job);
  }

  /** A command queued behind a round in flight, decided on the state that round leads to: a
   * caller waiting for onDecided need not wait for the round's commit as well. */
  private decideAhead(streamId: string, lane: StreamLane<C, S, E>, job: CommandJob<C, S, E>) {
    if (lane.ahead === null) return;
    const decided = decideOne(this.decider, job.command, lane.ahead);
    // What follows a refusal is left to the round, which may see it otherwise (a fresh read).
    lane.ahead = decided?.state ?? null;
    if (decided === null) return;
    job.ahead = decided;
    if (decided.events.length > 0) this.tell(streamId, job, decided.state);
  }

  /** Early word of a decision (HandleOptions.onDecided), only on a stream this process alone writes lately. */
  private tell(streamId: string, job: CommandJob<C, S, E>, state: S) {
    if (job.told || !job.options.onDecided || !this.streams.trusted(streamId)) return;
    job.told = true;
    job.options.onDecided(state);
  }

  /** A refused command whose events are already in the stream was a retry of one that succeeded. */
  private async alreadyApplied(streamId: string, commandId: string): Promise<boolean> {
    const firstId = eventIdFor(commandId, 0);
    const tail = await this.store.readStream(streamId, { direction: 'backwards', maxCount: 200 });
    return tail.some((event) => event.id === firstId);
  }
}
