import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Ledger } from '../../commands/ledger';
import { callRecord } from '../billable-call';
import { sentError } from '../errors';
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

function bodyModel(body: unknown): string {
  const model = body !== null && typeof body === 'object' ? (body as { model?: unknown }).model : undefined;
  return typeof model === 'string' ? model : '';
}

/**
 * Every answer of a billable route to a known key that is not a success and has no call-log row
 * from the handler gets one: refusals before the handler (402 at authentication, 429 of the rate
 * limits, 400/409 of Idempotency-Key, an unreadable body, a refused replay) as `rejected`, a 5xx the
 * handler gave before any hold as `error`, both at cost 0 (spec, "Call-log row": rejected calls are
 * still recorded). A 401 has no row: a missing or unknown key has no account to record in, and a key
 * refused as unusable (revoked, expired, its account inactive) is refused as an unknown key is.
 * The row is queued before the answer leaves and shares the wallet's next append (not awaited).
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
        if (reply.statusCode >= 400 && reply.statusCode !== 401 && !request.callRecorded && request.caller) record(request, reply, callLog);
        done(null, payload);
      });
    });

    function record(request: FastifyRequest, reply: FastifyReply, route: CallLogRoute) {
      const caller = request.caller!;
      const error = sentError(request);
      const status = reply.statusCode;
      const facts = {
        request,
        endpoint: route.endpoint,
        startedAt: performance.now() - reply.elapsedTime,
        submittedAt: now(),
        model: route.model?.(request) ?? bodyModel(request.body),
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
