import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { IdempotencyRefusal } from '../../idempotency/decider';
import { fingerprintBody, fingerprintParts, type BodyParts } from '../../idempotency/fingerprint';
import { checkIdempotencyKey } from '../../idempotency/key';
import type { Claim, CompleteOutcome, IdempotencyStore } from '../../idempotency/store';
import { GatewayError, sendError } from '../errors';
import { addRouteHook } from './route-hooks';

/** Per-route setting, in the route's `config`: billable POSTs honour `Idempotency-Key`. */
export interface IdempotencyConfig {
  readonly idempotent?: boolean;
  /** Whether the calling key may receive the stored answer of this request: the refusal a new
   * call of this key would meet (a model it may not use, its spend cap), else null. May read the
   * log (a music follow-up's model is its source task's). */
  readonly mayReplay?: (request: FastifyRequest) => GatewayError | null | Promise<GatewayError | null>;
  /** Answers up to this many bytes are kept for replay, when the route's answers may be larger than
   * the store's default (4 MiB) and must still replay (synchronous speech: audio bytes). */
  readonly idempotencyMaxBytes?: number;
}

export interface IdempotencyPluginOptions {
  readonly store: IdempotencyStore;
}

declare module 'fastify' {
  interface FastifyContextConfig extends IdempotencyConfig {}
  interface FastifyRequest {
    /** The key this request holds, when it carried `Idempotency-Key` on an idempotent route
     * and is the one to run; null otherwise (no header, replayed or refused). */
    idempotency: IdempotentCall | null;
    /** A route that parses its own body (multipart) sets one of these in its
     * `preValidation`; the plugin's `preHandler` fingerprints `request.body` otherwise. */
    idempotencyFingerprint: string | null;
    idempotencyFingerprintParts: BodyParts | null;
  }
}

export const REPLAYED_HEADER = 'Idempotency-Replayed';

export const REFUSAL_MESSAGES: Record<IdempotencyRefusal, string> = {
  idempotency_key_reuse:
    'This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.',
  idempotency_in_flight: 'A request with this Idempotency-Key is still running. Retry later with the same key to receive its result.',
  idempotency_response_not_cached:
    'The request with this Idempotency-Key succeeded and was billed, but its response was too large to keep for replay. Use a new key to run it again.',
};

/**
 * A request's hold on its key, settled exactly once: by the `onSend` hook (a normal reply),
 * by the handler itself (`completeHijacked` / `abandonHijacked` after `reply.hijack()`), or
 * by the connection-close backstop. Whichever comes first wins; the others are no-ops.
 */
export class IdempotentCall {
  private settling: Promise<CompleteOutcome> | null = null;

  constructor(
    private readonly store: IdempotencyStore,
    readonly claim: Claim,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** How long a run of the key counts (the store's retention): the ledger's memory of it lasts as long. */
  get retentionSeconds(): number {
    return this.store.policy.retentionSeconds;
  }

  get settled(): boolean {
    return this.settling !== null;
  }

  /** 2xx: remembered for replay (or as "not cached" when too large, or when `body` is null
   * because the bytes could not be captured); anything else frees the key. */
  complete(status: number, contentType: string, body: string | Uint8Array | null, maxStoredBytes?: number): Promise<CompleteOutcome> {
    this.settling ??= this.guard(this.store.complete(this.claim, { status, contentType, body, ...(maxStoredBytes !== undefined ? { maxStoredBytes } : {}) }));
    return this.settling;
  }

  abandon(): Promise<CompleteOutcome> {
    this.settling ??= this.guard(this.store.abandon(this.claim).then((held) => (held ? 'released' : 'lost')));
    return this.settling;
  }

  // The response matters more than its record: a failed write is logged, never thrown into
  // the reply. The key then stays in flight until its lease ends.
  private guard(outcome: Promise<CompleteOutcome>): Promise<CompleteOutcome> {
    return outcome.then(
      (result) => {
        if (result === 'lost') this.log.warn({ idempotencyKey: this.claim.key }, 'idempotency claim was no longer held when settled (lease expired)');
        return result;
      },
      (error: unknown) => {
        this.log.error({ err: error, idempotencyKey: this.claim.key }, 'could not record the idempotency outcome');
        return 'lost' as const;
      },
    );
  }
}

/** For a handler that wrote the response itself after `reply.hijack()`: record what it sent.
 * Pass the status that tells success (a keep-alive 200 carrying an error body is a failure).
 * Await it before ending the response, so that a client retrying at once finds the record.
 * A no-op when the request holds no key. Never rejects. */
export async function completeHijacked(request: FastifyRequest, status: number, contentType: string, body: string | Uint8Array | null): Promise<void> {
  await request.idempotency?.complete(status, contentType, body);
}

/** For a hijacked handler whose call failed: free the key now. Never rejects. */
export async function abandonHijacked(request: FastifyRequest): Promise<void> {
  await request.idempotency?.abandon();
}

function fingerprintOf(request: FastifyRequest): string {
  if (request.idempotencyFingerprint) return request.idempotencyFingerprint;
  const path = request.url.split('?')[0] ?? request.url;
  if (request.idempotencyFingerprintParts) return fingerprintParts(request.method, path, request.idempotencyFingerprintParts);
  return fingerprintBody(request.method, path, request.body);
}

/**
 * `Idempotency-Key` on routes with `config.idempotent === true` (spec, "Idempotency").
 * Needs `request.caller` (auth plugin, onRequest) and a parsed body or a route-set
 * fingerprint (preValidation), so its work happens in `preHandler`, and in `onSend`.
 */
export const idempotencyPlugin = fp<IdempotencyPluginOptions>(
  async (app: FastifyInstance, { store }) => {
    app.decorateRequest('idempotency', null);
    app.decorateRequest('idempotencyFingerprint', null);
    app.decorateRequest('idempotencyFingerprintParts', null);

    // Only the routes that take an Idempotency-Key get these hooks.
    app.addHook('onRoute', (route) => {
      if (route.config?.idempotent !== true) return;
      addRouteHook(route, 'preHandler', preHandler);
      addRouteHook(route, 'onSend', onSend);
    });

    async function preHandler(request: FastifyRequest, reply: FastifyReply) {
      const check = checkIdempotencyKey(request.headers['idempotency-key']);
      if (check.kind === 'absent') return;
      if (check.kind === 'invalid') return sendError(request, reply, new GatewayError('invalid_idempotency_key', check.message));
      const caller = request.caller;
      if (!caller) {
        // A configuration fault (idempotent route without `auth: 'key'`): the scope is the account.
        request.log.error('idempotent route without an authenticated caller');
        return sendError(request, reply, new GatewayError('internal_error', 'internal error; the request id is ' + request.id));
      }

      const result = await store.claim(caller.accountId, check.key, fingerprintOf(request));
      if (result.kind === 'refused') return sendError(request, reply, new GatewayError(result.code, REFUSAL_MESSAGES[result.code]));
      if (result.kind === 'replay') {
        // The answer was stored for the account; the key asking now must still be one that may have it.
        const refusal = await request.routeOptions.config?.mayReplay?.(request);
        if (refusal) return sendError(request, reply, refusal);
        const { status, contentType, body } = result.response;
        if (contentType) reply.header('content-type', contentType);
        return reply.code(status).header(REPLAYED_HEADER, 'true').header('x-gateway-trace', request.id).send(body);
      }

      const call = new IdempotentCall(store, result.claim, request.log);
      request.idempotency = call;
      const raw = reply.raw;
      let finished = false;
      const backstop = () => {
        if (call.settled) return;
        // The whole response went out and nobody recorded it: a hijacked handler that forgot
        // completeHijacked (a normal reply is settled in onSend, before any byte is written).
        // Its bytes are unknown, so the key is freed rather than held.
        if (finished || raw.writableFinished) {
          request.log.warn({ idempotencyKey: call.claim.key }, 'idempotent response finished without completeHijacked; key released');
          void call.abandon();
        }
        // Otherwise the client left before the response: the handler still runs and may
        // still charge, so the key stays held until its reply settles it (onSend, or
        // completeHijacked / abandonHijacked); if none ever comes, the lease frees the key.
      };
      // 'finish' as well as 'close': an injected (light-my-request) response only finishes.
      // Deferred a turn, so a handler that calls completeHijacked right after raw.end() wins.
      raw.once('finish', () => {
        finished = true;
        setImmediate(backstop);
      });
      raw.once('close', () => setImmediate(backstop));
    }

    async function onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
      const call = request.idempotency;
      if (!call || call.settled) return payload;
      const contentType = reply.getHeader('content-type');
      const body =
        typeof payload === 'string' || payload instanceof Uint8Array
          ? payload
          : payload === null || payload === undefined
            ? ''
            : null; // a stream: a 2xx is remembered as succeeded-not-cached, never run twice
      // Awaited: the record exists before the client can see the response and retry.
      await call.complete(reply.statusCode, typeof contentType === 'string' ? contentType : '', body, request.routeOptions.config?.idempotencyMaxBytes);
      return payload;
    }
  },
  { name: 'idempotency' },
);
