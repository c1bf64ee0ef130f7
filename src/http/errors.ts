import type { FastifyReply, FastifyRequest } from 'fastify';
import { databaseUnreachable } from '../storage/outage';
import type { ErrorShape } from '../upstream/contract';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The error shape of the route's protocol. */
    readonly shape?: ErrorShape;
    /** Every answer, errors included, carries `x-gateway-trace` (media endpoints). */
    readonly trace?: boolean;
  }
}

interface CodeInfo {
  readonly status: number;
  readonly chat: string;
  readonly messages: string;
  readonly generate: string;
}

/** The spec's error table: one code, its HTTP status, and its `type`/`status` per shape. */
export const ERROR_CODES = {
  model_not_found: { status: 400, chat: 'invalid_request_error', messages: 'not_found_error', generate: 'NOT_FOUND' },
  model_not_allowed: { status: 400, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  invalid_request: { status: 400, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  /** Agent key usage rule 6: an image to an agent whose model has no vision. */
  model_no_vision: { status: 400, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  tool_not_supported: { status: 400, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  /** Not in the spec's table (see docs/operations.md): a body over its route's limit, and a body
   * that did not arrive in time. The messages type is the one its vendor uses for a 413. */
  request_too_large: { status: 413, chat: 'invalid_request_error', messages: 'request_too_large', generate: 'INVALID_ARGUMENT' },
  request_timeout: { status: 408, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'DEADLINE_EXCEEDED' },
  invalid_idempotency_key: { status: 400, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'INVALID_ARGUMENT' },
  idempotency_key_reuse: { status: 409, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'ALREADY_EXISTS' },
  idempotency_in_flight: { status: 409, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'ALREADY_EXISTS' },
  idempotency_response_not_cached: { status: 409, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'ALREADY_EXISTS' },
  invalid_api_key: { status: 401, chat: 'authentication_error', messages: 'authentication_error', generate: 'UNAUTHENTICATED' },
  quota_exceeded: { status: 402, chat: 'insufficient_quota', messages: 'billing_error', generate: 'RESOURCE_EXHAUSTED' },
  permission_denied: { status: 403, chat: 'permission_error', messages: 'permission_error', generate: 'PERMISSION_DENIED' },
  not_found: { status: 404, chat: 'invalid_request_error', messages: 'not_found_error', generate: 'NOT_FOUND' },
  /** Not in the spec's table (docs/operations.md): a `Range` a hosted media file cannot serve. */
  range_not_satisfiable: { status: 416, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'OUT_OF_RANGE' },
  rate_limit_exceeded: { status: 429, chat: 'rate_limit_error', messages: 'rate_limit_error', generate: 'RESOURCE_EXHAUSTED' },
  internal_error: { status: 500, chat: 'server_error', messages: 'api_error', generate: 'INTERNAL' },
  upstream_unreachable: { status: 502, chat: 'api_error', messages: 'api_error', generate: 'UNAVAILABLE' },
  no_channel_available: { status: 503, chat: 'server_error', messages: 'overloaded_error', generate: 'UNAVAILABLE' },
  // Not in the spec's table (docs/operations.md): this account's ledger holds an event the gateway cannot read.
  account_unavailable: { status: 503, chat: 'server_error', messages: 'api_error', generate: 'UNAVAILABLE' },
  // Not in the spec's table (docs/operations.md): the gateway is shutting down (a new request on a
  // kept-alive connection, or a call that outlasted SHUTDOWN_GRACE_S); retried elsewhere. The messages
  // type is the one its SDK retries.
  gateway_shutting_down: { status: 503, chat: 'server_error', messages: 'overloaded_error', generate: 'UNAVAILABLE' },
  // Not in the spec's table (docs/operations.md, "Database and Redis outages"): the database, or an
  // EventStoreDB event store, cannot be reached (a restart, a crash, a failover, a network cut); retried
  // after Retry-After. The messages type is the one its SDK retries.
  service_unavailable: { status: 503, chat: 'server_error', messages: 'overloaded_error', generate: 'UNAVAILABLE' },
  // Not in the spec's table (docs/media.md, "Images, asynchronous mode"): the final answer of an async
  // image task the gateway was running when it stopped (failed, refunded; submit it again).
  gateway_interrupted: { status: 503, chat: 'server_error', messages: 'overloaded_error', generate: 'UNAVAILABLE' },
  // Not in the spec's table (docs/media.md): the kept answer of an async image task is gone (24 hours).
  result_expired: { status: 410, chat: 'invalid_request_error', messages: 'not_found_error', generate: 'NOT_FOUND' },
  // Not in the spec's table (docs/responses-websocket.md): `GET /v1/responses` without a WebSocket
  // upgrade, or with one while the WebSocket mode is off; the client falls back to `POST /v1/responses`.
  upgrade_required: { status: 426, chat: 'invalid_request_error', messages: 'invalid_request_error', generate: 'FAILED_PRECONDITION' },
  upstream_timeout: { status: 504, chat: 'api_error', messages: 'api_error', generate: 'DEADLINE_EXCEEDED' },
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** An error a client will see, as a value: a code from the spec's table and a message. */
export class GatewayError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** The code's status from the table, unless an endpoint's own list says otherwise (Errors rule 8). */
    status?: number,
  ) {
    super(message);
    this.name = 'GatewayError';
    this.status = status ?? ERROR_CODES[code].status;
  }

  /** Fastify's name for the status: scopes with their own error handler (admin, MCP) read it. */
  get statusCode(): number {
    return this.status;
  }
}

const MiB = 1024 * 1024;

/** A body over its route's limit (0: the route takes none). */
export function requestTooLarge(limit: number): GatewayError {
  const size = limit % MiB === 0 ? `${limit / MiB} MB` : limit % 1024 === 0 ? `${limit / 1024} KB` : `${limit} bytes`;
  return new GatewayError('request_too_large', limit === 0 ? 'this endpoint takes no request body' : `the request body is over this endpoint's limit of ${size}`);
}

export function errorBody(shape: ErrorShape, error: GatewayError): unknown {
  const info: CodeInfo = ERROR_CODES[error.code];
  switch (shape) {
    case 'messages':
      return { type: 'error', error: { type: info.messages, message: error.message } };
    case 'generate':
      return { error: { code: error.status, message: error.message, status: info.generate } };
    case 'chat':
      return { error: { message: error.message, type: info.chat, code: error.code } };
  }
}

/** The shape of a request's errors: declared by its route, else guessed from the path
 * (for requests that match no route). */
export function shapeOf(request: FastifyRequest): ErrorShape {
  const declared = request.routeOptions.config?.shape;
  if (declared) return declared;
  const path = request.url;
  if (path.startsWith('/v1/messages')) return 'messages';
  if (path.startsWith('/v1beta/')) return 'generate';
  return 'chat';
}

/** The error each request was answered with, for its call-log row (plugins/refused-calls.ts). */
const sentErrors = new WeakMap<FastifyRequest, GatewayError>();

export const sentError = (request: FastifyRequest): GatewayError | undefined => sentErrors.get(request);

export function sendError(request: FastifyRequest, reply: FastifyReply, error: GatewayError): FastifyReply {
  sentErrors.set(request, error);
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).type('application/json').send(errorBody(shapeOf(request), error));
}

/** Rule 5 of the spec's errors: an upstream non-2xx keeps its status and its message;
 * the chat shape maps the status to a code and type, the other two shapes say
 * api_error / UNAVAILABLE. */
export function upstreamErrorBody(shape: ErrorShape, status: number, message: string): unknown {
  if (shape === 'messages') return { type: 'error', error: { type: 'api_error', message } };
  if (shape === 'generate') return { error: { code: status, message, status: 'UNAVAILABLE' } };
  const [code, type] =
    status === 400 || status === 422
      ? ['invalid_request', 'invalid_request_error']
      : status === 401
        ? ['invalid_api_key', 'authentication_error']
        : status === 403
          ? ['permission_denied', 'permission_error']
          : status === 404
            ? ['not_found', 'invalid_request_error']
            : status === 429
              ? ['rate_limit_exceeded', 'rate_limit_error']
              : ['upstream_error', 'api_error'];
  return { error: { message, type, code } };
}

/** The code a call-log row shows for an upstream failure with this status. */
export function upstreamErrorCode(status: number): string {
  const body = upstreamErrorBody('chat', status, '') as { error: { code: string } };
  return body.error.code;
}

/** Seconds a client is asked to wait after a database outage: a restart or a failover takes a few,
 * and a connection attempt to a server that does not answer gives up after 10 (src/storage/sql.ts). */
export const OUTAGE_RETRY_AFTER_S = 5;

/** A request that failed because the database could not be reached (src/storage/outage.ts). */
export function storageUnavailable(requestId: string): GatewayError {
  return new GatewayError(
    'service_unavailable',
    `The gateway's storage cannot be reached right now; retry in a few seconds (request id ${requestId}).`,
    { 'retry-after': String(OUTAGE_RETRY_AFTER_S) },
  );
}

/** What a request that threw is answered with, when the thrown value is not a refusal of its own: a
 * database or event store outage (src/storage/outage.ts) is 503 `service_unavailable` with Retry-After
 * (the client retries), anything else 500 `internal_error`. */
export function failureOf(error: unknown, requestId: string): GatewayError {
  if (error instanceof GatewayError) return error;
  if (databaseUnreachable(error)) return storageUnavailable(requestId);
  return new GatewayError('internal_error', `internal error; the request id is ${requestId}`);
}

/** A stream of the log that cannot be read (UnreadableEventError) as the client sees it: its
 * account, key or base is unavailable; every other one goes on. */
export function unavailable(streamId: string, requestId: string): GatewayError {
  const what = streamId.startsWith('key-') ? 'this API key' : streamId.startsWith('wallet-') ? 'this account' : 'this resource';
  return new GatewayError(
    'account_unavailable',
    `The records of ${what} cannot be read right now: the ledger holds an event this gateway cannot decode. Other accounts are not affected; contact support with request id ${requestId}.`,
  );
}
