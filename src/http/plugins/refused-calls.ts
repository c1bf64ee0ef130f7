import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Ledger } from '../../commands/ledger';
import { callRecord } from '../billable-call';
import { sentError } from '../errors';
import { readRequestedModel } from '../intake/requested-model';
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

/**
 * The byte limit within which a refusal's body is read for its model, or null when it is not read: the
 * body was parsed or read already, it is not plain JSON (a multipart image edit, a compressed body), or it
 * says it is larger than the route takes. The limit is the route's own JSON limit (intake/body-classes.ts):
 * no more than the call would have read had it been admitted.
 */
function unreadJsonLimit(request: FastifyRequest): number | null {
  const raw = request.raw;
  if (request.body !== undefined || raw.readableDidRead || raw.readableEnded || !isJson(request)) return null;
  const encoding = raw.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return null;
  const rule = request.routeOptions.config.body;
  const limit = rule?.json?.limit ?? rule?.limit ?? 0;
  const declared = Number(raw.headers['content-length'] ?? 0);
  return limit > 0 && !(declared > limit) ? limit : null;
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
 * refused call. Its JSON body is then read here, only for its row: streamed through a scan that keeps
 * nothing but the top-level `model` (intake/requested-model.ts), never parsed, never buffered; within the
 * route's own JSON limit (what an admitted call reads), within REFUSED_BODY_WAIT_MS, only when the row
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
        const limit = named === '' ? unreadJsonLimit(request) : null;
        if (limit === null || !ledger.recordsRejected(request.caller.accountId)) {
          record(request, reply, callLog, named);
          return done(null, payload);
        }
        readRequestedModel(request.raw, limit, REFUSED_BODY_WAIT_MS).then((model) => {
          record(request, reply, callLog, model ?? '');
          done(null, payload);
        });
      });
    });

    function record(request: FastifyRequest, reply: FastifyReply, route: CallLogRoute, model: string) {
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
        error_message: error?.message ?? `HTTP ${status}`,
        ...(route.unitType ? { unit_type: route.unitType } : {}),
      });
      ledger.recordRejected(caller.accountId, call, true).catch((failure: unknown) => request.log.error({ err: failure }, 'could not record a refused call'));
    }
  },
  { name: 'refused-calls', dependencies: ['auth'] },
);
