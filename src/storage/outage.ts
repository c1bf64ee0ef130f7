import type { EventStoreUnreachableError } from '../events/store/port';

/**
 * Whether an error says the database could not be reached, as opposed to a statement it refused:
 * a server restarting, crashed, failing over, cut off, or out of connections; or the event store,
 * when it is an engine of its own (EventStoreDB), could not be reached: its adapter says so with the
 * port's EventStoreUnreachableError, whatever its client threw. Such a failure is
 * the client's to retry (the gateway reconnects by itself: src/storage/README.md), so it is
 * answered 503 with Retry-After, never 500 (issue 31, item 12; docs/operations.md, "Database and
 * Redis outages"). Anything else (a constraint, a syntax error, a bug) stays a 500.
 */
export function databaseUnreachable(error: unknown): boolean {
  return unreachable(error, 0);
}

/**
 * The `code` of the event store port's EventStoreUnreachableError. Read as a tag, not by `instanceof`:
 * src/events imports src/storage, and storage does not import it back at run time (the type keeps the
 * two spellings the same).
 */
const EVENT_STORE_UNREACHABLE: EventStoreUnreachableError['code'] = 'event_store_unreachable';

/** Socket errors of the connection to the server (Node's `code`). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs of a server that cannot serve now: class 08 (connection exception), 57P01
 * admin_shutdown (a fast stop or a failover ended the connection), 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up or in recovery), 53300 too_many_connections.
 */
const SERVER_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/**
 * `pg` and `pg-pool` say these without a code: the server closed the socket, the pool could not
 * connect within its time limit (connectionTimeoutMillis), a client broken earlier was asked again.
 * PGlite says it is closed once its WebAssembly instance has died or was shut.
 */
const MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /^timeout expired$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^PGlite is closed$/,
];

function unreachable(error: unknown, depth: number): boolean {
  if (error === null || typeof error !== 'object' || depth > 4) return false;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string') {
    if (e.code === EVENT_STORE_UNREACHABLE || SOCKET_CODES.has(e.code) || SERVER_STATES.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code)) return true;
  }
  if (typeof e.message === 'string' && MESSAGES.some((pattern) => pattern.test(e.message as string))) return true;
  // Node reports a connection refused on every address of a name (IPv4 and IPv6) as an AggregateError.
  if (Array.isArray(e.errors) && e.errors.some((inner) => unreachable(inner, depth + 1))) return true;
  return unreachable(e.cause, depth + 1);
}
