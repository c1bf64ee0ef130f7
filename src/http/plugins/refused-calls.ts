import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Ledger } from '../../commands/ledger';
import { callRecord } from '../billable-call';
import { sentError } from '../errors';
import { multipartBoundary, MultipartModel, readRequestedModel, TopLevelModel, type ModelScan } from '../intake/requested-model';
import { addRouteHook } from './route-hooks';

/** A billable route's calls have call-log rows: under which endpoint, and where its model is named. */
export interface CallLogRoute {
  /** The call-log `endpoint`: a chat protocol, or e.g. `images.generations`. */
  readonly endpoint: string;
  readonly unitType?: string;
  /** The model the request names when it is not the body's `model` (generate-content: the path). */
  readonly model?: (request: FastifyRequest) => string | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    readonly callLog?: CallLogRoute;
  }
  interface FastifyRequest {
    /** A call-log row for this request is written or on its way (a hold's settlement or release,
     * or a refusal); set by `callRecord`. */
    callRecorded: boolean;
  }
}

export interface RefusedCallsOptions {
  readonly ledger: Ledger;
  readonly now: () => number;
}

/** The most a refusal's answer waits for the model in its body: past it the row names none. */
export const REFUSED_BODY_WAIT_MS = 5_000;

function bodyModel(body: unknown): string {
  const model = body !== null && typeof body === 'object' ? (body as { model?: unknown }).model : undefined;
  return typeof model === 'string' ? model : '';
}

const isJson = (request: FastifyRequest): boolean => /^\s*application\/json\b/i.test(request.headers['content-type'] ?? '');

/** A refusal's unread body: read within `limit` bytes through `scan` for its model, or not readable (`unknown`: why). */
type UnreadBody = { readonly limit: number; readonly scan: ModelScan } | { readonly unknown: string };

/**
 * How a refusal's body is read for its model, or null when it is not: the body was parsed or read
 * already, or it is neither JSON nor multipart/form-data. The limit is the route's own for that form
 * (intake/body-classes.ts: the images' 16 MB of JSON, their 95 MB of multipart): no more than the call would
 * have read had it been admitted. A body that says it is larger is still read within the limit when the
 * refusal came before its size was checked (402, 429): a model named before the limit is kept. A
 * compressed body (`Content-Encoding`) is not read: the gateway accepts none on any route (an admitted
 * one fails as JSON that does not parse), so the row says the model is not known, and why.
 */
function unreadBody(request: FastifyRequest, status: number): UnreadBody | null {
  const raw = request.raw;
  if (request.body !== undefined || raw.readableDidRead || raw.readableEnded) return null;
  const boundary = multipartBoundary(request.headers['content-type']);
  if (boundary === null && !isJson(request)) return null;
  const encoding = raw.headers['content-encoding']?.trim();
  if (encoding && encoding.toLowerCase() !== 'identity')
    return { unknown: `the model it names is not known: its body is compressed (Content-Encoding: ${encoding.slice(0, 40)}), which the gateway does not accept` };
  const rule = request.routeOptions.config.body;
  const limit = (boundary === null ? rule?.json?.limit : undefined) ?? rule?.limit ?? 0;
  if (limit === 0) return null;
  const declared = Number(raw.headers['content-length'] ?? 0);
  if (declared > limit && status !== 402 && status !== 429) return null;
  return { limit, scan: boundary === null ? new TopLevelModel() : new MultipartModel(boundary) };
}

/**
 * Every answer of a billable route to a known key that is not a success and has no call-log row
 * from the handler gets one: refusals before the handler (402 at authentication, 429 of the rate
 * limits, 400/409 of Idempotency-Key, an unreadable body, a refused replay) as `rejected`, a 5xx the
 * handler gave before any hold as `error`, both at cost 0 (spec, "Call-log row": rejected calls are
 * still recorded). A 401 has no row: a missing or unknown key has no account to record in, and a key
 * refused as unusable (revoked, expired, its account inactive) is refused as an unknown key is.
 * The row is queued before the answer leaves and shares the wallet's next append (not awaited).
 *
 * The row names the model the client asked for (finance and the account holder need it): the path's
 * (generate-content) or the parsed body's. A 402 or 429 is decided in an onRequest hook (auth.ts,
 * rate-limit.ts), before the body is read, and stays there: no hold, no limiter slot and no parse for a
 * refused call. Its body is then read here, only for its row: streamed through a scan that keeps
 * nothing but the model (a JSON body's top-level `model`, a multipart body's `model` field:
 * intake/requested-model.ts), never parsed, never buffered; within the route's own limit for that form
 * (what an admitted call reads), within REFUSED_BODY_WAIT_MS, only when the row
 * will be written (the account's refusal budget, so a client hammering its 429 makes the gateway read at
 * most that many bodies a minute), and never before authentication (the caller is a known key by then).
 * The answer waits for it, as a parsed call waits for its body; a body too slow names no model.
 */
export const refusedCallsPlugin = fp<RefusedCallsOptions>(
  async (app: FastifyInstance, { ledger, now }) => {
    app.decorateRequest('callRecorded', false);

    app.addHook('onRoute', (route) => {
      const callLog = route.config?.callLog;
      if (!callLog) return;
      addRouteHook(route, 'onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) => {
        // A 401 after authentication (the account deactivated before its hold) is refused like any
        // 401, which has no row: only a key that can be used is a caller whose calls are recorded.
        if (reply.statusCode < 400 || reply.statusCode === 401 || request.callRecorded || !request.caller) return done(null, payload);
        const named = callLog.model?.(request) ?? bodyModel(request.body);
        const body = named === '' ? unreadBody(request, reply.statusCode) : null;
        if (body === null || 'unknown' in body || !ledger.recordsRejected(request.caller.accountId)) {
          record(request, reply, callLog, named, body && 'unknown' in body ? body.unknown : null);
          return done(null, payload);
        }
        readRequestedModel(request.raw, body.limit, REFUSED_BODY_WAIT_MS, body.scan).then((model) => {
          record(request, reply, callLog, model ?? '');
          done(null, payload);
        });
      });
    });

    /** `unknown`: why the row names no model, added to its message. */
    function record(request: FastifyRequest, reply: FastifyReply, route: CallLogRoute, model: string, unknown: string | null = null) {
      const caller = request.caller!;
      const error = sentError(request);
      const status = reply.statusCode;
      const facts = {
        request,
        endpoint: route.endpoint,
        startedAt: performance.now() - reply.elapsedTime,
        submittedAt: now(),
        model,
        attempts: 0,
        channelId: null,
      };
      const call = callRecord(facts, {
        status: status < 500 ? 'rejected' : 'error',
        error_code: error?.code ?? (status < 500 ? 'invalid_request' : 'internal_error'),
        error_message: `${error?.message ?? `HTTP ${status}`}${unknown ? ` (${unknown})` : ''}`,
        ...(route.unitType ? { unit_type: route.unitType } : {}),
      });
      ledger.recordRejected(caller.accountId, call, true).catch((failure: unknown) => request.log.error({ err: failure }, 'could not record a refused call'));
    }
  },
  { name: 'refused-calls', dependencies: ['auth'] },
);
