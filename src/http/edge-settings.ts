import { isIP } from 'node:net';

// TRUST_PROXY and CORS_ORIGINS as settings (src/runtime/settings.ts): parsed here, apart from the fastify
// plugin of edge.ts, so that reading the settings (every CLI command) loads no HTTP framework.

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
