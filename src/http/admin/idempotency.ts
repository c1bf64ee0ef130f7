import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IdempotencyRefusal } from '../../idempotency/decider';
import { fingerprintBody } from '../../idempotency/fingerprint';
import { checkIdempotencyKey } from '../../idempotency/key';
import type { Claim, IdempotencyStore } from '../../idempotency/store';
import { REPLAYED_HEADER } from '../plugins/idempotency';

/** The scope of the operator's keys in the idempotency store (client keys are scoped by account
 * id, `acct_…`, so the two never meet). */
export const ADMIN_IDEMPOTENCY_SCOPE = 'admin';

/** How a route whose answer carries a secret (a new API key) keeps it for a replay: never the
 * secret itself. `restore` gives null when the secret can no longer be had. */
export interface AdminReplay {
  keep(body: string): string;
  restore(body: string): Promise<string | null>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    readonly adminReplay?: AdminReplay;
  }
}

const MESSAGES: Record<IdempotencyRefusal, string> = {
  idempotency_key_reuse: 'This Idempotency-Key was already used with a different request (path or body). Use a new key for a new request.',
  idempotency_in_flight: 'A request with this Idempotency-Key is still running. Retry later with the same key to receive its result.',
  idempotency_response_not_cached: 'The request with this Idempotency-Key succeeded, but its answer cannot be given again. Use a new key to run it again.',
};

function refuse(reply: FastifyReply, status: number, code: string, message: string) {
  return reply.code(status).send({ error: { code, message } });
}

/**
 * `Idempotency-Key` on the admin API's POSTs (a payment webhook that retries a top-up, a script
 * that retries an account or key creation): the same rules as the client endpoints (src/idempotency:
 * 1-200 printable characters, one run per key, the 2xx answer replayed for 7 days, 409 for another
 * body or a run in flight) in the admin scope, with the admin API's error shape.
 */
export function adminIdempotency(app: FastifyInstance, store: IdempotencyStore) {
  const claims = new WeakMap<FastifyRequest, Claim>();

  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const check = checkIdempotencyKey(request.headers['idempotency-key']);
    if (check.kind === 'absent') return;
    if (check.kind === 'invalid') return refuse(reply, 400, 'invalid_idempotency_key', check.message);
    const path = request.url.split('?')[0] ?? request.url;
    const result = await store.claim(ADMIN_IDEMPOTENCY_SCOPE, check.key, fingerprintBody(request.method, path, request.body));
    if (result.kind === 'refused') return refuse(reply, 409, result.code, MESSAGES[result.code]);
    if (result.kind === 'replay') {
      let body = result.response.body.toString('utf8');
      const rule = request.routeOptions.config?.adminReplay;
      if (rule) {
        const restored = await rule.restore(body);
        if (restored === null) return refuse(reply, 409, 'idempotency_response_not_cached', MESSAGES.idempotency_response_not_cached);
        body = restored;
      }
      if (result.response.contentType) reply.header('content-type', result.response.contentType);
      return reply.code(result.response.status).header(REPLAYED_HEADER, 'true').send(body);
    }
    claims.set(request, result.claim);
  });

  // Every answer of a claimed request passes here, errors included (a non-2xx frees the key).
  app.addHook('onSend', async (request, reply, payload) => {
    const claim = claims.get(request);
    if (!claim) return payload;
    claims.delete(request);
    let body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    const rule = request.routeOptions.config?.adminReplay;
    const ok = reply.statusCode >= 200 && reply.statusCode < 300;
    if (body !== null && rule && ok) body = rule.keep(body);
    const contentType = reply.getHeader('content-type');
    // Awaited: the record exists before the client can see the answer and retry.
    await store
      .complete(claim, { status: reply.statusCode, contentType: typeof contentType === 'string' ? contentType : '', body })
      .catch((error: unknown) => request.log.error({ err: error, idempotencyKey: claim.key }, 'could not record the admin idempotency outcome'));
    return payload;
  });
}
