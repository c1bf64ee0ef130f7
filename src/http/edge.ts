import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isIP } from 'node:net';

/**
 * How the gateway meets the network in front of it: which proxies it believes about the client's
 * address and scheme (`TRUST_PROXY`), and which browser origins may call the client API
 * (`CORS_ORIGINS`). Both off by default.
 */

/** fastify's `trustProxy`: false, true (every hop), a hop count, or the proxies' addresses / CIDRs. */
export type TrustProxy = boolean | number | string[];
/** Origins allowed to call the client API from a browser: every one (`*`) or a list; null: CORS off. */
export type CorsOrigins = '*' | string[] | null;

/** TRUST_PROXY: unset or `false`, `true`, a number of hops, or a comma-separated list of addresses and CIDRs. */
export function trustProxyOf(value: string | undefined): TrustProxy {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address, prefix, ...rest] = entry.split('/');
    const family = isIP(address ?? '');
    const prefixOk = prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || rest.length > 0) throw new Error(`TRUST_PROXY must be true, false, a number of hops or a comma-separated list of IP addresses and CIDRs, not "${entry}"`);
  }
  return entries;
}

/** CORS_ORIGINS: unset (off), `*`, or a comma-separated list of origins (`https://app.example.com`). */
export function corsOriginsOf(value: string | undefined): CorsOrigins {
  if (value === undefined) return null;
  if (value === '*') return '*';
  const origins = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const origin of origins) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin)
      throw new Error(`CORS_ORIGINS must be * or a comma-separated list of origins such as https://app.example.com, not "${origin}"`);
  }
  return origins;
}

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
