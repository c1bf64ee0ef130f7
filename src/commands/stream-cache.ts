import { decodeRecorded, type DomainEvent } from '../events/catalog';
import type { ConcurrencyError, EventStore, RecordedEvent } from '../events/store/port';
import type { Decider } from './decision';
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

export interface Loaded<S> {
  readonly revision: bigint; // -1n: no stream
  readonly state: S;
}

/** A cached state knows the id of the event it was folded up to: the revision alone does not
 * tell the stream it was folded from, once a database crash has lost events and another
 * writer has appended at their revisions. */
export interface Cached<S> extends Loaded<S> {
  readonly lastId: string | null;
}

/** Events read from a stream at a time when it is read from its start or a snapshot. */
const READ_PAGE = 5000;
export const CACHE_LIMIT = 10_000;
/** How long after another process was last seen writing a stream its cached state is no
 * longer trusted for early decisions (onDecided). */
const TRUSTED_AFTER_MS = 60_000;

/**
 * The folded state of each stream this process works on, with its revision, so a hot wallet is
 * read forward from where it was, not replayed. Kept in step with this process's own appends
 * (`remember`); what others wrote is found by reading forward (`refresh`), which also notes that
 * someone else writes the stream: its state is then not trusted for early decisions for a while.
 * A stream not cached is read from its latest snapshot when there is one, and a snapshot is taken
 * every `Snapshotting.every` events.
 */
export class StreamCache<S, E extends DomainEvent> {
  private readonly cache = new Map<string, Cached<S>>();
  /** When each cached state was last known to match the store (ms, performance.now()). */
  private readonly checkedAt = new Map<string, number>();
  /** When another process was last seen writing each stream (ms, performance.now()). */
  private readonly foreignWriteAt = new Map<string, number>();
  /** The revision of each cached stream's latest snapshot known to this process. */
  private readonly snapshotAt = new Map<string, bigint>();
  /** Snapshots being written. */
  private readonly saving = new Set<Promise<void>>();
  /** Set at shutdown: a read that has more pages to go fails instead (stopLongReads). */
  private stopping = false;

  constructor(
    private readonly store: EventStore,
    private readonly decider: Pick<Decider<never, S, E>, 'initialState' | 'evolve'>,
    /** Streams whose state is kept (least recently used forgotten first): fewer for large states. */
    private readonly limit: number,
    private readonly snapshots: Snapshotting | null,
  ) {
    // The database may have lost events this cache was folded from (see Sql.onReset).
    store.onReset?.(() => this.forget());
  }

  /** The cached state, however old: commands decide on it and let the expected revision tell. */
  get(streamId: string): Cached<S> | undefined {
    return this.cache.get(streamId);
  }

  /** The cached state when it was checked against the store less than `maxAgeMs` ago. */
  fresh(streamId: string, maxAgeMs: number): Loaded<S> | undefined {
    const cached = this.cache.get(streamId);
    const at = this.checkedAt.get(streamId);
    return cached && at !== undefined && performance.now() - at <= maxAgeMs ? cached : undefined;
  }

  /** Drops every cached state: each stream is read again from the log when next needed. */
  forget(): void {
    this.cache.clear();
    this.checkedAt.clear();
  }

  /** Forgets a stream whose cached state may not be the stream's: the next read starts from the log. */
  drop(streamId: string) {
    this.cache.delete(streamId);
    this.checkedAt.delete(streamId);
    this.snapshotAt.delete(streamId);
  }

  /** The stream folded from the log alone: the whole stream, the cache neither read nor changed. */
  fromLog(streamId: string): Promise<Cached<S>> {
    return this.foldForward(streamId, { revision: -1n, state: this.decider.initialState, lastId: null });
  }

  /**
   * The cached state read forward to the end of the stream. The read starts at the cached
   * revision itself (the same round trip, one event more): the event there must be the one the
   * cache was folded up to. Another event there, or none, means the database lost events this
   * process saw and the cache describes a stream that does not exist: it is dropped and the
   * whole stream read again.
   */
  async refresh(streamId: string): Promise<Cached<S>> {
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
    const loaded = (await this.fromSnapshot(streamId)) ?? (await this.fromLog(streamId));
    if (loaded.revision >= 0n) this.remember(streamId, loaded, checked);
    return loaded;
  }

  /** Another process wrote the stream. A conflict whose stream is behind the cache, or holds
   * another event at the cached revision (the database lost its newest commits in a crash, and
   * maybe someone appended at their revisions since), must not be read forward from the cache:
   * the next `refresh` starts again from the stream. */
  conflicted(streamId: string, error: ConcurrencyError) {
    this.sawForeignWrite(streamId);
    const cached = this.cache.get(streamId);
    if (cached && (error.actual === 'no_stream' || error.actual <= cached.revision)) this.drop(streamId);
  }

  /** No other process was seen writing the stream for TRUSTED_AFTER_MS: this process's state of it
   * is the stream's, as far as anyone can tell before an append. */
  trusted(streamId: string): boolean {
    const at = this.foreignWriteAt.get(streamId);
    if (at === undefined) return true;
    if (performance.now() - at < TRUSTED_AFTER_MS) return false;
    this.foreignWriteAt.delete(streamId);
    return true;
  }

  /** After this process's own append the state it decided is the stream's: kept without a read. */
  remember(streamId: string, loaded: Cached<S>, checked = performance.now()) {
    this.cache.delete(streamId);
    this.cache.set(streamId, loaded);
    this.checkedAt.set(streamId, checked);
    if (this.cache.size > this.limit) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
      this.checkedAt.delete(oldest);
      this.snapshotAt.delete(oldest);
    }
    this.snapshotIfDue(streamId, loaded);
  }

  private sawForeignWrite(streamId: string) {
    this.foreignWriteAt.delete(streamId);
    this.foreignWriteAt.set(streamId, performance.now());
    if (this.foreignWriteAt.size > CACHE_LIMIT) this.foreignWriteAt.delete(this.foreignWriteAt.keys().next().value as string);
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
   * its first snapshot) is never held in memory whole. The next page is asked for before this one is
   * folded, so the database reads it while this process decodes: a long fold takes about the longer
   * of the two instead of their sum. */
  private async foldForward(streamId: string, from: Cached<S>): Promise<Cached<S>> {
    let loaded = from;
    let next = this.store.readStream(streamId, { fromRevision: loaded.revision + 1n, maxCount: READ_PAGE });
    for (;;) {
      const page = await next;
      const full = page.length === READ_PAGE;
      if (full && this.stopping) throw new Error(`the read of ${streamId} was stopped: the process is shutting down`);
      if (full) next = this.store.readStream(streamId, { fromRevision: page[page.length - 1]!.revision + 1n, maxCount: READ_PAGE });
      try {
        loaded = this.fold(loaded, page);
      } catch (error) {
        // The page asked for ahead is not awaited any more: its failure, if any, is not this read's.
        if (full) next.catch(() => {});
        throw error;
      }
      if (!full) return loaded;
      // A turn of the event loop between pages: embedded PGlite answers through promises alone, and a long
      // fold (the snapshot backfill's) must not hold back the requests and signals of everyone else.
      await new Promise((resolve) => setImmediate(resolve));
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
    const saved = store
      .save(streamId, { revision: loaded.revision, eventId: loaded.lastId, version, state })
      .catch((error: unknown) => {
        if (this.snapshotAt.get(streamId) === loaded.revision) this.snapshotAt.delete(streamId);
        onError?.(error, streamId);
      })
      .finally(() => this.saving.delete(saved));
    this.saving.add(saved);
  }

  /** From now on a read that has more than a page left fails at its next page: a shutdown does not wait
   * for a long fold (a stream without a snapshot, being loaded by the snapshot backfill). */
  stopLongReads(): void {
    this.stopping = true;
  }

  /** Resolves when the snapshots being written now are written (or failed, which onError was told). */
  async saved(): Promise<void> {
    await Promise.all(this.saving);
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
}
