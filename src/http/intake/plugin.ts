import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { GatewayError, requestTooLarge as tooLarge, sendError } from '../errors';
import { addRouteHook } from '../plugins/route-hooks';
import { BODY_RULES, bodyClassOf, type BodyClass, type JsonRule } from './body-classes';
import { hasNulEscape, jsonBoundsProblem, StringLengthWatch } from './json-shape';
import { redactUrl } from '../../metrics/redact';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the intake plugin from the route's body class (see body-classes.ts), or from the route's own
     * `bodyLimit` when it declares one. */
    readonly body?: { readonly limit: number; readonly deadlineMs: number; readonly refuseNul: boolean; readonly json: JsonRule | null };
  }
}

/** The server's own time limits. None of them can cut a response: Node's request time-out ends
 * once the request (its body included) has arrived, and the idle time is longer than any silence
 * a route keeps while it waits for its upstream (a chat call's 180 s, an image's 90 s before its
 * keep-alive). */
export interface IntakeTimings {
  /** From the request's first byte to the end of its headers. */
  readonly headersMs: number;
  /** From the request's first byte to the end of its body: the slowest upload allowed (95 MB). */
  readonly requestMs: number;
  /** A connection with no traffic either way for this long is closed. */
  readonly idleMs: number;
  /** An idle keep-alive connection between requests is closed after this long. */
  readonly keepAliveMs: number;
  /** Tests only: one deadline for every JSON body instead of the table's. */
  readonly jsonDeadlineMs?: number;
}

export const INTAKE_TIMINGS: IntakeTimings = { headersMs: 30_000, requestMs: 300_000, idleMs: 300_000, keepAliveMs: 72_000 };

/** The Fastify options that bound connections; the body limits are set per route by the plugin. */
export function serverOptions(timings: IntakeTimings): Pick<FastifyServerOptions, 'requestTimeout' | 'connectionTimeout' | 'keepAliveTimeout' | 'bodyLimit'> & {
  http: { headersTimeout: number; connectionsCheckingInterval: number };
} {
  return {
    requestTimeout: timings.requestMs,
    connectionTimeout: timings.idleMs,
    keepAliveTimeout: timings.keepAliveMs,
    // Node checks both request time-outs on this period: keep it a fraction of the shorter one.
    http: { headersTimeout: timings.headersMs, connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(timings.headersMs / 4))) },
    // Every route gets its own limit from the table; this one only applies to unknown paths,
    // which are refused before their body is read.
    bodyLimit: 1,
  };
}

/** True when the request says it carries a body (a length above 0, or chunks). */
function declaresBody(raw: IncomingMessage): boolean {
  const length = raw.headers['content-length'];
  return raw.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function declaredLength(raw: IncomingMessage): number {
  const length = raw.headers['content-length'];
  return length === undefined ? 0 : Number(length);
}

const isMultipart = (raw: IncomingMessage): boolean => /^\s*multipart\//i.test(raw.headers['content-type'] ?? '');

const MiB = 1024 * 1024;
const sizeText = (bytes: number) => (bytes % MiB === 0 ? `${bytes / MiB} MB` : `${bytes} bytes`);

/** A JSON body over its class's own bounds: the whole body (where the class has its own JSON limit),
 * or one string in it. */
function jsonTooLarge(rule: JsonRule, what: 'body' | 'string'): GatewayError {
  const over = what === 'body' ? `the JSON body is over this endpoint's limit of ${sizeText(rule.limit ?? 0)}` : `a string in the JSON body (a data URI) is over this endpoint's limit of ${sizeText(rule.stringLimit)} for one value`;
  return new GatewayError('request_too_large', `${over}; ${rule.instead}`);
}

const hasNul = (value: unknown): boolean =>
  typeof value === 'string' ? value.includes('\u0000') : Array.isArray(value) ? value.some(hasNul) : false;

/** The first path or query parameter holding a NUL character: no text column can store one. */
function nulParameter(request: FastifyRequest): string | null {
  for (const [name, value] of Object.entries((request.params ?? {}) as Record<string, unknown>)) if (hasNul(value)) return name;
  for (const [name, value] of Object.entries((request.query ?? {}) as Record<string, unknown>)) if (hasNul(value)) return name;
  return null;
}

/** Fastify's own refusals (unparsable JSON, a body over the limit, an unknown content type) as the
 * gateway's errors; null for anything that is not the client's fault. */
export function clientErrorOf(error: unknown, request: FastifyRequest): GatewayError | null {
  if (error instanceof GatewayError) return error;
  const { statusCode, code, message } = error as { statusCode?: number; code?: string; message?: string };
  if (statusCode === 413 || code === 'FST_ERR_CTP_BODY_TOO_LARGE') return tooLarge(request.routeOptions.bodyLimit ?? 0);
  if (statusCode === 415 || code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new GatewayError('invalid_request', `unsupported content type ${JSON.stringify(request.headers['content-type'] ?? '')}; send application/json`);
  if (statusCode === 408) return new GatewayError('request_timeout', message ?? 'the request did not arrive in time');
  if (code === 'FST_ERR_BAD_URL') return new GatewayError('invalid_request', 'the URL is not valid: it has a malformed percent-encoding');
  if (code === 'FST_ERR_MAX_PARAM_LENGTH') return new GatewayError('invalid_request', 'a segment of the URL path is too long');
  if (statusCode !== undefined && statusCode >= 400 && statusCode < 500) return new GatewayError('invalid_request', `invalid request: ${message ?? code ?? 'refused'}`);
  return null;
}

/** An error of a request that has no route: in the shape of the API its path belongs to. */
export function sendByPath(request: FastifyRequest, reply: FastifyReply, error: GatewayError): FastifyReply {
  const path = request.url.split('?')[0]!;
  if (path.startsWith('/admin/')) return reply.code(error.status).type('application/json').send({ error: { code: error.code, message: error.message } });
  if (path === '/mcp') return reply.code(error.status).type('application/json').send(jsonRpcError(error));
  return sendError(request, reply, error);
}

/** A body that could not be parsed: not JSON, empty, or over the structure bounds. */
export class UnparsableBody extends GatewayError {
  constructor(message: string) {
    super('invalid_request', message);
  }
}

/** The MCP transport's error shape: JSON-RPC's, with no id (the request was never read). The
 * codes are the ones the MCP SDK's own transport gives: -32700 for a body it cannot parse,
 * -32000 for a refusal at the HTTP level. */
export function jsonRpcError(error: GatewayError): unknown {
  const code = error instanceof UnparsableBody ? -32700 : error.status >= 500 ? -32603 : error.status === 400 ? -32600 : -32000;
  return { jsonrpc: '2.0', error: { code, message: error.message }, id: null };
}

export interface IntakeOptions {
  readonly timings: IntakeTimings;
  /** The config's `body_limits`: a body class's limit instead of the table's (a route's own limit still wins). */
  readonly bodyLimits?: Partial<Record<BodyClass, number>>;
}

/**
 * Request intake at the edge: each route's body limit from the body-class table, a body refused
 * before it is read (unknown path, a route that takes none, a length over the limit, a refused
 * key), JSON bounded in size, time, depth and count before it is parsed, NUL characters refused
 * in paths and queries, and a connection closed rather than drained when its body was refused.
 */
export const intakePlugin = fp<IntakeOptions>(
  async (app: FastifyInstance, { timings, bodyLimits = {} }) => {
    app.addHook('onRoute', (route: RouteOptions) => {
      const methods = [route.method].flat();
      const bodyClass = methods.map((m) => bodyClassOf(m, route.url)).find((c) => c !== 'none') ?? 'none';
      const rule = BODY_RULES[bodyClass];
      // A route may declare its own limit (a test's stand-in route); else its body class's applies.
      const limit = route.bodyLimit ?? (rule.limit > 0 ? (bodyLimits[bodyClass] ?? rule.limit) : 0);
      if (limit > 0) route.bodyLimit = limit;
      route.config = { ...(route.config ?? {}), body: { limit, deadlineMs: rule.deadlineMs || BODY_RULES.chat.deadlineMs, refuseNul: rule.refuseNul === true, json: rule.json ?? null } };
      // A route hook, so that it runs after authentication (the app's and the admin API's):
      // a request without a valid key learns nothing about its body.
      addRouteHook(route, 'onRequest', checkRequest);
    });

    function checkRequest(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
      const body = request.routeOptions.config.body;
      const limit = body?.limit ?? 0;
      if (limit === 0 ? declaresBody(request.raw) : declaredLength(request.raw) > limit) return done(tooLarge(limit));
      // Anything but multipart is read by the JSON reader (or refused as an unknown type): its own bound.
      const jsonLimit = body?.json?.limit;
      if (jsonLimit !== undefined && !isMultipart(request.raw) && declaredLength(request.raw) > jsonLimit) return done(jsonTooLarge(body!.json!, 'body'));
      const nul = nulParameter(request);
      if (nul !== null) return done(new GatewayError('invalid_request', `${nul} must not contain NUL (U+0000) characters`));
      done();
    }

    // A path with no route answers 404 at once: its body, whatever its size, is never read.
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.is404) return done(notFound(request));
      done();
    });

    // A body the gateway did not read (a refusal sent before it arrived) is not drained: the
    // connection is closed once the answer is written.
    app.addHook('onSend', (request, reply, payload, done) => {
      if (!request.raw.complete && declaresBody(request.raw)) reply.header('connection', 'close');
      done(null, payload);
    });

    // Fastify's own parser (it refuses `__proto__` and `constructor.prototype` keys), run only on a
    // text that has passed the bounds.
    const parseJson = app.getDefaultJsonParser('error', 'error');
    function parsed(request: FastifyRequest, text: string, refuseNul: boolean): Promise<unknown> {
      if (text.length === 0) throw new UnparsableBody('the request body is empty; send a JSON object');
      const problem = jsonBoundsProblem(text);
      if (problem) throw new UnparsableBody(problem);
      if (refuseNul && hasNulEscape(text)) throw new GatewayError('invalid_request', 'the request body must not contain NUL (U+0000) characters');
      return new Promise((resolve, reject) =>
        parseJson(request, text, (error, value) => (error ? reject(new UnparsableBody(`the request body is not valid JSON: ${error.message}`)) : resolve(value))),
      );
    }
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', async (request: FastifyRequest, payload: IncomingMessage) => {
      const rule = request.routeOptions.config.body ?? { limit: 0, deadlineMs: 0, refuseNul: true, json: null };
      const text = await readBody(payload ?? request.raw, rule.limit, timings.jsonDeadlineMs ?? rule.deadlineMs, rule.json);
      return parsed(request, text, rule.refuseNul);
    });
  },
  { name: 'intake' },
);

export function notFound(request: FastifyRequest): GatewayError {
  return new GatewayError('not_found', `no route for ${request.method} ${redactUrl(request.url).split('?')[0]!.slice(0, 200)}`);
}

/** The body as text: refused past `limit` bytes (not one more is kept) or after `deadlineMs`; with a
 * JSON rule, at its own limit instead (where it has one) and as soon as one string passes its string limit. */
function readBody(payload: IncomingMessage, limit: number, deadlineMs: number, json: JsonRule | null = null): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const max = json?.limit ?? limit;
    const strings = json ? new StringLengthWatch(json.stringLimit) : null;
    const timer = deadlineMs > 0 ? setTimeout(() => finish(new GatewayError('request_timeout', `the request body did not arrive within ${deadlineMs / 1000} s`)), deadlineMs) : undefined;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > max) return finish(json?.limit !== undefined ? jsonTooLarge(json, 'body') : tooLarge(limit));
      if (strings?.feed(chunk)) return finish(jsonTooLarge(json!, 'string'));
      chunks.push(chunk);
    };
    const onEnd = () => finish(null);
    const onClose = () => finish(new GatewayError('invalid_request', 'the connection closed before the request body arrived'));
    function finish(error: GatewayError | null) {
      clearTimeout(timer);
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', onClose);
      payload.off('close', onClose);
      if (error) {
        // Nothing more is read: the answer closes the connection.
        payload.pause();
        return reject(error);
      }
      resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, received).toString('utf8'));
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onClose);
    payload.on('close', onClose);
    payload.resume();
  });
}
