/**
 * The event store port. Everything outside src/events talks to this interface only,
 * so the engine (PGlite, Postgres, EventStoreDB) is a deployment choice.
 */

/** A place in the global log. Both engines order the log by a pair:
 * EventStoreDB by its (commit, prepare) positions, the Postgres adapters by
 * (transaction id, global_position) so that a reader never skips an event
 * committed out of order. Compare with `comparePositions`, never by one half. */
export interface Position {
  readonly commit: bigint;
  readonly prepare: bigint;
}

export const START: Position = Object.freeze({ commit: -1n, prepare: -1n });

export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

/** `no_stream`: the stream must not exist; `any`: no check; a bigint: the revision
 * of the stream's last event must be exactly this (revisions start at 0). */
export type ExpectedRevision = 'no_stream' | 'any' | bigint;

export interface NewEvent {
  /** A UUID. Deterministic ids make a retried append a recognised duplicate. */
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  readonly metadata?: Record<string, unknown>;
}

export interface RecordedEvent {
  readonly id: string;
  readonly streamId: string;
  readonly revision: bigint;
  readonly position: Position;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: Record<string, unknown>;
  readonly createdAt: Date;
}

export interface AppendResult {
  /** Revision of the last event of the stream after the append. */
  readonly nextRevision: bigint;
  /** Position of the last appended event (of the original append for a duplicate). */
  readonly position: Position;
  /** True when every event id was already in the stream: nothing was written. */
  readonly duplicate: boolean;
}

export class ConcurrencyError extends Error {
  readonly code = 'wrong_expected_revision' as const;
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'ConcurrencyError';
  }
}

/** Some but not all of an append's event ids exist already, or they exist in another stream. */
export class DuplicateEventConflictError extends Error {
  readonly code = 'event_id_conflict' as const;
  constructor(readonly streamId: string, readonly eventIds: readonly string[]) {
    super(`stream ${streamId}: event ids already used by a different append: ${eventIds.join(', ')}`);
    this.name = 'DuplicateEventConflictError';
  }
}

/**
 * The engine could not be reached, after whatever retries its adapter makes: a server that is down,
 * restarting, failing over or cut off, a cluster with no leader to take the write, a call that ran out
 * of time. Nothing says the request itself was wrong, and a retry a few seconds later may succeed.
 * An adapter whose client has errors of its own throws this one for them (the client's error is the
 * `cause`), so that nothing outside src/events needs to know the client: src/storage/outage.ts counts
 * it as an outage, answered 503 `service_unavailable` with Retry-After. An engine on the gateway's SQL
 * connection (the events table) needs none: outage.ts reads those errors itself.
 */
export class EventStoreUnreachableError extends Error {
  /** What outage.ts reads (it does not import this module at run time). */
  readonly code = 'event_store_unreachable' as const;
  constructor(
    readonly engine: EventStore['engine'],
    cause: unknown,
  ) {
    super(`the event store (${engine}) cannot be reached: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'EventStoreUnreachableError';
  }
}

export interface ReadStreamOptions {
  readonly direction?: 'forwards' | 'backwards';
  /** First revision to read (inclusive). Forwards default 0, backwards default the end. */
  readonly fromRevision?: bigint;
  readonly maxCount?: number;
}

export interface ReadAllOptions {
  /** Read events strictly after this position; default the start of the log. */
  readonly after?: Position;
  readonly maxCount?: number;
}

export interface FollowOptions {
  readonly after?: Position;
  readonly signal?: AbortSignal;
}

export interface AppendOptions {
  /** false: the append may return before its commit is flushed to disk, where the engine
   * allows that (Postgres `synchronous_commit = off` for this transaction only). It is
   * still atomic and ordered; a crash of the database server may lose it, together with
   * everything committed after it. Default true. */
  readonly durable?: boolean;
  /**
   * With an expected revision: the id of the event the caller saw at that revision. A store
   * that can lose acknowledged appends (Postgres: a crash loses what did not wait for the flush)
   * checks it too, so that a caller whose view of the stream holds lost events cannot append
   * after events it never saw that another writer put at the same revisions. A mismatch is a
   * ConcurrencyError whose `actual` equals the expected revision.
   */
  readonly expectedEventId?: string;
}

export interface EventStore {
  readonly engine: 'pglite' | 'postgres' | 'eventstoredb';
  append(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision, options?: AppendOptions): Promise<AppendResult>;
  /** Events of one stream; an unknown stream reads as empty. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** The global log in commit order, only events every reader can already see. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Position of the newest committed event (START for an empty log). An event may be
   * committed and not yet readable by readAll while an older transaction is in flight. */
  headPosition(): Promise<Position>;
  /** Follows the global log: every event exactly once, in order, until the signal aborts. */
  follow(options?: FollowOptions): AsyncIterable<RecordedEvent>;
  /**
   * Calls `listener` whenever events this store acknowledged or handed out may have been lost
   * (Postgres: a connection failed, or the server restarted or failed over): whatever is
   * cached from its reads and appends must be dropped. Absent on a store that never loses an
   * acknowledged append. Returns the function that removes the listener.
   */
  onReset?(listener: () => void): () => void;
  close(): Promise<void>;
}

/**
 * A store that passes everything to `store` except what `overrides` replaces: the one way to wrap a
 * store (append checks, metrics, tests), so that no wrapper forgets a method — a wrapper without
 * `onReset` once left the command handlers' caches folded from events a database crash lost.
 */
export function storeWith(store: EventStore, overrides: Partial<EventStore>): EventStore {
  return {
    engine: store.engine,
    append: (...args) => store.append(...args),
    readStream: (...args) => store.readStream(...args),
    readAll: (...args) => store.readAll(...args),
    headPosition: () => store.headPosition(),
    follow: (...args) => store.follow(...args),
    ...(store.onReset ? { onReset: (listener: () => void) => store.onReset!(listener) } : {}),
    close: () => store.close(),
    ...overrides,
  };
}
