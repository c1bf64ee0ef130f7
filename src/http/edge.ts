import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { CorsOrigins } from './edge-settings';

/**
 * How the gateway meets the network in front of it: which proxies it believes about the client's
 * address and scheme (`TRUST_PROXY`), and which browser origins may call the client API
 * (`CORS_ORIGINS`). Both off by default.
 */

export { corsOriginsOf, trustProxyOf, type CorsOrigins, type TrustProxy } from './edge-settings';

/** The client API a browser may call: never the admin API, the console or the metrics. */
const CLIENT_PATHS = /^\/(v1|v1beta|api)(\/|$)/;

/** The gateway's own answer headers a browser client may read. */
const EXPOSED_HEADERS = ['x-gateway-trace', 'x-gateway-cost', 'x-request-id', 'retry-after', 'x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests', 'x-protocol-translation', 'x-protocol-warning', 'idempotency-replayed'];

export async function registerCors(app: FastifyInstance, origins: CorsOrigins): Promise<void> {
  if (origins === null) return;
  await app.register(cors, {
    // Per request: the client API answers the allowed origins; every other path answers none.
    delegator: (request: FastifyRequest, callback) => {
      const client = CLIENT_PATHS.test(request.url);
      callback(null, {
        origin: client ? (origins === '*' ? '*' : origins) : false,
        methods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
        // No list: the preflight's own Access-Control-Request-Headers are allowed (the SDKs send
        // x-stainless-* headers of many names, and keys in authorization, x-api-key or x-goog-api-key).
        exposedHeaders: EXPOSED_HEADERS,
        maxAge: 600,
      });
    },
  });
}
