/**
 * The event store port on EventStoreDB (gRPC, `@eventstore/db-client`).
 * Long (over 400 lines) and kept whole on purpose: the one-file rule below keeps every name of the
 * client library in this file, so its error translation and subscriptions cannot move out.
 *
 * ONE-FILE RULE: every name that comes from the client library (the client class, its
 * constants such as NO_STREAM / ANY / START / END, its error classes, `jsonEvent`,
 * `excludeSystemEvents`, its types) is used in this file and nowhere else in the tree, but for
 * this file's unit spec (eventstoredb.unit.spec.ts), which drives it with the client's errors.
 * Moving to `@kurrent/kurrentdb-client` (the renamed, maintained client with the same API
 * shape; the client class is called `KurrentDBClient` there) is a change to this file only:
 * nothing outside it may import from `@eventstore/db-client`.
 *
 * How the port's contract maps onto EventStoreDB:
 * - Positions are the server's `{commit, prepare}` log positions; START (-1, -1) means
 *   "from the beginning" and is sent as the client's START constant.
 * - Reading `$all` from a position is inclusive on the server, so readAll and follow drop
 *   everything at or before `after` themselves.
 * - System events (types starting with `$`, e.g. `$metadata`, link events `$>`), events
 *   of system streams (names starting with `$`) and non-JSON events are never returned.
 * - Duplicates: EventStoreDB answers a retried append (same event ids, same expected
 *   revision) with *success*, and on current servers that success carries the original
 *   write's revision and position, so the append result alone cannot tell a retry from a
 *   fresh write. The adapter therefore looks for the event ids in the stream before
 *   appending (one short read around the expected revision, or the tail for `any`),
 *   and again after a wrong-expected-version answer. All ids there, in order: the append
 *   is a duplicate and nothing is written; only some: DuplicateEventConflictError.
 *   Unlike the Postgres adapter, ids used in *another* stream cannot be detected (the
 *   server has no lookup by event id), and a duplicate that lands between our check and
 *   our append is still accepted by the server but reported as `duplicate: false`.
 * - AppendResult.position is the `$all` position of the last appended event, read back
 *   after the append (the server's own append position is only used as a fallback).
 * - A server that cannot be reached: what the client says of it (`isUnreachable`: unavailable,
 *   deadline exceeded, timed out, not leader, cancelled by the server, a raw gRPC status of
 *   those, a cluster discovery that found no node) leaves every method of the port as the
 *   port's EventStoreUnreachableError, its cause the client's error. `follow` first retries
 *   the transient ones as it always has; only what escapes its retries is translated.
 *   Everything else (the port's own errors, a refused request) goes out as it is.
 */
import {
  ANY,
  BACKWARDS,
  END,
  ErrorType,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  START as CLIENT_START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  convertToCommandError,
  excludeSystemEvents,
  isCommandError,
  jsonEvent,
  type AllStreamResolvedEvent,
  type AppendExpectedRevision,
  type JSONType,
  type ReadPosition,
  type ReadRevision,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { encodeJson } from './json';
import {
  ConcurrencyError,
  DuplicateEventConflictError,
  EventStoreUnreachableError,
  START,
  comparePositions,
  storeWith,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type FollowOptions,
  type NewEvent,
  type Position,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
} from './port';

/** readAll without maxCount returns at most this many events (as the Postgres adapter does). */
const DEFAULT_READ_ALL_MAX = 1000;
/** Largest page asked from the server in one readAll round trip. */
const READ_ALL_PAGE_MAX = 1000;
/** follow resubscribes after transient failures, at most this many times in a row. */
const FOLLOW_MAX_RETRIES = 10;
const FOLLOW_RETRY_BASE_MS = 200;
const FOLLOW_RETRY_MAX_MS = 5000;

/** A subscription that lived this long counts as healthy: its failure starts a fresh retry count. */
const FOLLOW_HEALTHY_MS = 30_000;

/** Fallback when the client gives an event no position at all (it should not, for servers from 22.6 on). */
const UNKNOWN_POSITION: Position = Object.freeze({ commit: -1n, prepare: -1n });

type ClientResolvedEvent = ResolvedEvent | AllStreamResolvedEvent;

const noop = () => undefined;

function isSystemName(name: string): boolean {
  return name.startsWith('$');
}

function isStart(position: Position): boolean {
  return position.commit < 0n || position.prepare < 0n;
}

function toReadPosition(after: Position): ReadPosition {
  return isStart(after) ? CLIENT_START : { commit: after.commit, prepare: after.prepare };
}

function errorType(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const type = (error as { type?: unknown }).type;
  return typeof type === 'string' ? type : undefined;
}

function isStreamNotFound(error: unknown): boolean {
  return error instanceof StreamNotFoundError || errorType(error) === ErrorType.STREAM_NOT_FOUND;
}

function isWrongExpectedVersion(error: unknown): error is WrongExpectedVersionError {
  return error instanceof WrongExpectedVersionError || errorType(error) === ErrorType.WRONG_EXPECTED_VERSION;
}

/** Failures after which a subscription is worth opening again. */
function isTransient(error: unknown): boolean {
  const type = errorType(error);
  return (
    type === ErrorType.UNAVAILABLE ||
    type === ErrorType.DEADLINE_EXCEEDED ||
    type === ErrorType.TIMEOUT ||
    type === ErrorType.NOT_LEADER ||
    type === ErrorType.CANCELLED
  );
}

/**
 * The client's own error for `error`: most calls convert the server's gRPC status into the client's
 * error classes, but not all (appendToStream's check of the server's features hands a refused
 * connection over as the raw status 14 UNAVAILABLE).
 */
function asClientError(error: unknown): unknown {
  if (!(error instanceof Error) || isCommandError(error)) return error;
  try {
    return convertToCommandError(error);
  } catch {
    return error; // not a gRPC status after all (the conversion reads fields only a status has)
  }
}

/** What the client throws when no node of the cluster answered its gossip (esdb+discover://). */
const DISCOVERY_FAILED = /^Failed to discover after \d+ attempts\.$/;

/**
 * Failures that say the server cannot be reached now, rather than that it refused the request: the
 * transient ones (a refused or cut connection is UNAVAILABLE; a follower that cannot take a write
 * is NOT_LEADER; a call that ran out of time, DEADLINE_EXCEEDED or TIMEOUT), also as a raw gRPC
 * status, and a cluster discovery that found no node.
 */
function isUnreachable(error: unknown): boolean {
  if (isTransient(asClientError(error))) return true;
  return error instanceof Error && DISCOVERY_FAILED.test(error.message);
}

/** The port's error for a server that cannot be reached; any other error as it is. */
function translated(error: unknown): unknown {
  return isUnreachable(error) ? new EventStoreUnreachableError('eventstoredb', error) : error;
}

/** One call of the port, the client's "cannot reach the server" translated on its way out. */
async function reaching<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw translated(error);
  }
}

function toClientExpected(streamId: string, expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === 'no_stream') return NO_STREAM;
  if (expected === 'any') return ANY;
  // -1 is "before the first event", i.e. an empty stream: the Postgres adapter reads it that way too.
  if (expected === -1n) return NO_STREAM;
  if (expected < -1n) throw new RangeError(`stream ${streamId}: invalid expected revision ${expected}`);
  return expected;
}

function toActual(actual: unknown): bigint | 'no_stream' {
  return typeof actual === 'bigint' && actual >= 0n ? actual : 'no_stream';
}

/** JSON value of domain data: bigint becomes a decimal string (see ./json), undefined becomes null. */
function toJsonValue(value: unknown): unknown {
  const text = encodeJson(value);
  return text === undefined ? null : (JSON.parse(text) as unknown);
}

function toEventData(event: NewEvent) {
  return jsonEvent({
    id: event.id,
    type: event.type,
    data: toJsonValue(event.data) as JSONType,
    metadata: event.metadata === undefined ? undefined : (toJsonValue(event.metadata) as JSONType),
  });
}

function asMetadata(metadata: unknown): Record<string, unknown> {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata) || metadata instanceof Uint8Array) {
    return {};
  }
  return metadata as Record<string, unknown>;
}

/** The port's view of a client event, or null for what the port never shows. */
function toRecorded(resolved: ClientResolvedEvent): RecordedEvent | null {
  const event = resolved.event;
  if (!event || !event.isJson) return null;
  if (isSystemName(event.type) || isSystemName(event.streamId)) return null;
  const position: Position =
    event.position ??
    (resolved.commitPosition !== undefined
      ? { commit: resolved.commitPosition, prepare: resolved.commitPosition }
      : UNKNOWN_POSITION);
  return {
    id: event.id,
    streamId: event.streamId,
    revision: event.revision,
    position: { commit: position.commit, prepare: position.prepare },
    type: event.type,
    data: event.data,
    metadata: asMetadata(event.metadata),
    createdAt: event.created,
  };
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export function createEventStoreDbStore(connectionString: string): EventStore {
  const client = EventStoreDBClient.connectionString(connectionString);
  let closed = false;

  async function readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const backwards = options.direction === 'backwards';
    let maxCount: number | undefined;
    if (options.maxCount !== undefined && Number.isFinite(options.maxCount)) {
      maxCount = Math.floor(options.maxCount);
      if (maxCount <= 0) return [];
    }
    let fromRevision: ReadRevision = backwards ? END : CLIENT_START;
    if (options.fromRevision !== undefined) {
      if (options.fromRevision < 0n) {
        if (backwards) return [];
      } else {
        fromRevision = options.fromRevision;
      }
    }
    const out: RecordedEvent[] = [];
    try {
      const reading = client.readStream(streamId, {
        direction: backwards ? BACKWARDS : FORWARDS,
        fromRevision,
        maxCount,
      });
      for await (const resolved of reading) {
        const recorded = toRecorded(resolved);
        if (recorded) out.push(recorded);
      }
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw error;
    }
    return out;
  }

  async function headRevision(streamId: string): Promise<bigint | null> {
    const [head] = await readStream(streamId, { direction: 'backwards', maxCount: 1 });
    return head ? head.revision : null;
  }

  /**
   * Looks for the append's event ids where a retry would find them: around the expected
   * revision (the events before it too, for a caller that reloaded after its first try
   * went through) and, with `tail` or for `any`, at the end of the stream.
   * Returns the duplicate's result, null when none of the ids is there, and throws
   * DuplicateEventConflictError when only some of them are (or not as one append).
   */
  async function findExisting(
    streamId: string,
    events: readonly NewEvent[],
    expected: ExpectedRevision,
    tail: boolean,
  ): Promise<AppendResult | null> {
    const n = events.length;
    const wanted = new Set(events.map((e) => e.id.toLowerCase()));
    const reads: Promise<RecordedEvent[]>[] = [];
    if (expected === 'no_stream' || expected === -1n) {
      reads.push(readStream(streamId, { fromRevision: 0n, maxCount: n }));
    } else if (typeof expected === 'bigint') {
      const from = expected + 1n - BigInt(n) > 0n ? expected + 1n - BigInt(n) : 0n;
      const to = expected + BigInt(n);
      reads.push(readStream(streamId, { fromRevision: from, maxCount: Number(to - from + 1n) }));
    }
    if (expected === 'any' || tail) {
      reads.push(readStream(streamId, { direction: 'backwards', maxCount: n }));
    }
    const found = new Map<string, RecordedEvent>();
    for (const batch of await Promise.all(reads)) {
      for (const event of batch) {
        const id = event.id.toLowerCase();
        if (wanted.has(id)) found.set(id, event);
      }
    }
    if (found.size === 0) return null;
    const matches = events.map((e) => found.get(e.id.toLowerCase()));
    const first = matches[0];
    const sameAppend =
      first !== undefined &&
      matches.every((m, i) => m !== undefined && m.revision === first.revision + BigInt(i));
    if (!sameAppend) {
      throw new DuplicateEventConflictError(
        streamId,
        events.filter((e) => found.has(e.id.toLowerCase())).map((e) => e.id),
      );
    }
    const last = matches[n - 1]!;
    const head = await headRevision(streamId);
    return { nextRevision: head ?? last.revision, position: last.position, duplicate: true };
  }

  /** Position of the last appended event, read back so that it is exactly its `$all` position. */
  async function positionOf(
    streamId: string,
    events: readonly NewEvent[],
    nextRevision: bigint,
    reported: Position | undefined,
  ): Promise<Position> {
    try {
      const [last] = await readStream(streamId, { direction: 'backwards', fromRevision: nextRevision, maxCount: 1 });
      const lastId = events[events.length - 1]!.id.toLowerCase();
      // Servers before 22.6 send no positions with stream reads; the client then shows 0/0.
      if (last && last.revision === nextRevision && last.id.toLowerCase() === lastId && last.position.commit > 0n) {
        return last.position;
      }
    } catch (error) {
      // The events are written; do not turn that into a failure because the read-back failed.
      if (reported === undefined) throw error;
    }
    if (reported === undefined) throw new Error(`stream ${streamId}: append reported no position`);
    return { commit: reported.commit, prepare: reported.prepare };
  }

  const store: EventStore = {
    engine: 'eventstoredb',

    async append(streamId, events, expected) {
      if (events.length === 0) throw new Error('append needs at least one event');
      const expectedRevision = toClientExpected(streamId, expected);

      const existing = await findExisting(streamId, events, expected, false);
      if (existing) return existing;

      let result;
      try {
        result = await client.appendToStream(streamId, events.map(toEventData), { expectedRevision });
      } catch (error) {
        if (!isWrongExpectedVersion(error)) throw error;
        const duplicate = await findExisting(streamId, events, expected, true);
        if (duplicate) return duplicate;
        throw new ConcurrencyError(streamId, expected, toActual(error.actualVersion));
      }

      const nextRevision = result.nextExpectedRevision;
      const position = await positionOf(streamId, events, nextRevision, result.position);
      return { nextRevision, position, duplicate: false };
    },

    readStream,

    async readAll(options: ReadAllOptions = {}) {
      const limit =
        options.maxCount === undefined || !Number.isFinite(options.maxCount)
          ? DEFAULT_READ_ALL_MAX
          : Math.max(0, Math.floor(options.maxCount));
      const out: RecordedEvent[] = [];
      let cursor: Position = options.after ?? START;
      while (out.length < limit) {
        // +1: the server's read includes the event at the cursor itself.
        const pageSize = Math.min(Math.max(limit - out.length + 1, 32), READ_ALL_PAGE_MAX);
        let read = 0;
        let last: Position | undefined;
        const reading = client.readAll({ fromPosition: toReadPosition(cursor), maxCount: pageSize, direction: FORWARDS });
        for await (const resolved of reading) {
          read++;
          const event = resolved.event;
          if (!event) continue;
          if (comparePositions(event.position, cursor) <= 0) continue;
          last = event.position;
          const recorded = toRecorded(resolved);
          if (recorded) out.push(recorded);
        }
        if (read < pageSize || last === undefined) break; // end of the log
        cursor = last;
      }
      return out.slice(0, limit);
    },

    async headPosition() {
      for await (const resolved of client.readAll({ fromPosition: END, maxCount: 50, direction: BACKWARDS })) {
        const recorded = resolved.event ? toRecorded(resolved) : null;
        if (recorded) return recorded.position;
      }
      return START;
    },

    async *follow(options: FollowOptions = {}) {
      const signal = options.signal;
      let last: Position = options.after ?? START;
      let failures = 0;
      while (!signal?.aborted && !closed) {
        const subscription = client.subscribeToAll({
          fromPosition: toReadPosition(last),
          filter: excludeSystemEvents(),
        });
        // Errors are read through the iterator; this keeps a late one (after we stopped
        // iterating) from becoming an unhandled 'error' event.
        subscription.on('error', noop);
        const openedAt = Date.now();
        // unsubscribe() cancels the call, which ends the stream; destroy() makes sure the
        // iterator below returns even if the end never arrives.
        const stop = () => {
          void subscription
            .unsubscribe()
            .catch(noop)
            .then(() => {
              if (!subscription.destroyed) subscription.destroy();
            });
        };
        signal?.addEventListener('abort', stop, { once: true });
        try {
          for await (const resolved of subscription) {
            if (signal?.aborted) return;
            failures = 0;
            const event = resolved.event;
            if (!event) continue;
            if (comparePositions(event.position, last) <= 0) continue;
            last = event.position;
            const recorded = toRecorded(resolved);
            if (recorded) yield recorded;
          }
          if (signal?.aborted || closed) return;
          // The server ended the subscription: open it again.
          if (Date.now() - openedAt > FOLLOW_HEALTHY_MS) failures = 0;
          if (++failures > FOLLOW_MAX_RETRIES) throw new Error('EventStoreDB ended the $all subscription repeatedly');
        } catch (error) {
          if (signal?.aborted || closed) return;
          if (!isTransient(error)) throw translated(error);
          if (Date.now() - openedAt > FOLLOW_HEALTHY_MS) failures = 0;
          if (++failures > FOLLOW_MAX_RETRIES) throw translated(error);
        } finally {
          signal?.removeEventListener('abort', stop);
          void subscription.unsubscribe().catch(noop);
        }
        await pause(Math.min(FOLLOW_RETRY_BASE_MS * 2 ** (failures - 1), FOLLOW_RETRY_MAX_MS), signal);
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      await client.dispose();
    },
  };

  // On the way out only: inside, findExisting and positionOf read the client's own errors.
  return storeWith(store, {
    append: (...args) => reaching(() => store.append(...args)),
    readStream: (...args) => reaching(() => store.readStream(...args)),
    readAll: (...args) => reaching(() => store.readAll(...args)),
    headPosition: () => reaching(() => store.headPosition()),
  });
}
