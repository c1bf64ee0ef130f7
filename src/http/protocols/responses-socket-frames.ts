import { isObject, tryJson } from '../../upstream/json';
import { errorBody, type GatewayError } from '../errors';

// The frames of the Responses WebSocket mode (docs/responses-websocket.md), as Codex speaks them:
// a client message is `{"type": "response.create", ...the Responses request body's fields}` (or
// `response.processed`, an acknowledgement), a server message is one server event of the SSE
// stream, its JSON alone. Pure: the socket (./responses-socket.ts) does the sending.

/** What one client text frame asks for. */
export type ClientFrame =
  /** A response: `body` is the Responses request as `POST /v1/responses` takes it (streamed). */
  | { readonly kind: 'create'; readonly body: Record<string, unknown> }
  /** `generate: false`: Codex warming the connection up; answered by the gateway, no model call. */
  | { readonly kind: 'warmup'; readonly body: Record<string, unknown> }
  /** `response.processed`: the client's acknowledgement of a response; nothing to answer. */
  | { readonly kind: 'ignored' }
  | { readonly kind: 'invalid'; readonly message: string };

/** Fields of `response.create` that belong to the socket, not to the Responses request. */
const SOCKET_FIELDS = new Set(['type', 'generate']);

export function clientFrame(text: string): ClientFrame {
  const json = tryJson(text);
  if (!isObject(json)) return { kind: 'invalid', message: 'a WebSocket message must be a JSON object with a `type`' };
  const type = json.type;
  if (type === 'response.processed') return { kind: 'ignored' };
  if (type !== 'response.create')
    return { kind: 'invalid', message: `unsupported message type ${typeof type === 'string' ? `\`${type.slice(0, 80)}\`` : '(none)'}; send \`response.create\`` };
  // Codex sends the request's fields at the top level; a `response` object (the Realtime API's
  // shape) is taken too.
  const source = isObject(json.response) ? { ...json, ...json.response } : json;
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(source)) if (!SOCKET_FIELDS.has(name) && name !== 'response') body[name] = value;
  // Every response on the socket is a stream: its events are the socket's messages.
  body.stream = true;
  return json.generate === false ? { kind: 'warmup', body } : { kind: 'create', body };
}

/** The events that end a response: one of them closes each `response.create`. */
const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error']);
export const isTerminal = (type: string | undefined): boolean => type !== undefined && TERMINAL.has(type);

/** The error body of the HTTP route (`{error: {message, type, code, param}}`) or anything else it answered. */
interface HttpError {
  readonly message?: unknown;
  readonly type?: unknown;
  readonly code?: unknown;
  readonly param?: unknown;
}

/** Headers of a refusal the client acts on (Codex reads them from the error event's `headers`). */
const KEPT_HEADERS = ['retry-after', 'x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests', 'x-request-id', 'x-gateway-trace'];

/**
 * The error event of a response the gateway refused or could not serve, in the shape Codex reads
 * (`{"type": "error", "status": 429, "error": {type, code, message, param}, "headers": {...}}`):
 * the HTTP route's status and error body, so a client treats it as the same HTTP answer (a 429 is
 * retried after Retry-After, a 401 is an authentication failure, a 400 is not retried).
 */
export function errorEvent(status: number, body: unknown, headers: Readonly<Record<string, string | string[] | undefined>> = {}): Record<string, unknown> {
  const error = (isObject(body) && isObject(body.error) ? body.error : {}) as HttpError;
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = headers[name];
    if (typeof value === 'string') kept[name] = value;
  }
  return {
    type: 'error',
    status,
    error: {
      type: typeof error.type === 'string' ? error.type : status >= 500 ? 'server_error' : 'invalid_request_error',
      code: typeof error.code === 'string' ? error.code : null,
      message: typeof error.message === 'string' ? error.message : `the request was answered with HTTP ${status}`,
      param: typeof error.param === 'string' ? error.param : null,
    },
    ...(Object.keys(kept).length > 0 ? { headers: kept } : {}),
  };
}

/** An error of the socket's own (a malformed message, a full queue, the shutdown) as the HTTP route would
 * answer it (the chat shape of errors.ts: status, type and code from the spec's table), in the same shape. */
export function socketError(error: GatewayError): Record<string, unknown> {
  return errorEvent(error.status, errorBody('chat', error));
}

/**
 * The answer to a warm-up (`generate: false`): `response.created` and `response.completed` of an
 * empty response, the way the Responses WebSocket server answers one. No model is called, so
 * nothing is held, billed or logged.
 */
export function warmupEvents(body: Record<string, unknown>, id: string, createdAt: number): Record<string, unknown>[] {
  const response = (status: string) => ({
    id,
    object: 'response',
    created_at: createdAt,
    status,
    model: typeof body.model === 'string' ? body.model : null,
    output: [],
    previous_response_id: typeof body.previous_response_id === 'string' ? body.previous_response_id : null,
    usage: status === 'completed' ? { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 } : null,
  });
  return [
    { type: 'response.created', sequence_number: 0, response: response('in_progress') },
    { type: 'response.completed', sequence_number: 1, response: response('completed') },
  ];
}

/** The type of a server event (its SSE `event:` name, else its JSON's `type`). */
export function eventType(name: string | undefined, data: string): string | undefined {
  if (name) return name;
  const json = tryJson(data);
  return isObject(json) && typeof json.type === 'string' ? json.type : undefined;
}
