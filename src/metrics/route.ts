import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { GatewayMetrics } from './metrics';

export interface MetricsRouteOptions {
  readonly metrics: GatewayMetrics;
  /** METRICS_TOKEN: when set, a scrape must send `Authorization: Bearer <token>`. */
  readonly token: string | undefined;
  /** HOST, the address the gateway listens on: beyond loopback, the metrics need a token. */
  readonly host: string;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether a listener on `host` is reachable from this machine only: `localhost`, 127.0.0.0/8 or ::1
 * (IPv4-mapped too). Any other name may resolve to an interface others reach, so it is not. */
export function isLoopbackHost(host: string): boolean {
  const name = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (name === 'localhost') return true;
  const ipVersion = isIP(name);
  return ipVersion !== 0 && LOOPBACK.check(name, ipVersion === 4 ? 'ipv4' : 'ipv6');
}

/** Who may scrape: anybody with the token when one is set; without one, anybody only when nobody but
 * this machine can reach the listener. The image and the compose file listen on 0.0.0.0, where an open
 * /metrics would tell the world the models, channels, traffic and spend of every tenant. */
export type MetricsAccess = 'token' | 'open' | 'refused';
export const metricsAccessOf = (token: string | undefined, host: string): MetricsAccess => (token !== undefined ? 'token' : isLoopbackHost(host) ? 'open' : 'refused');

const REFUSED = (host: string) =>
  `/metrics is refused: the gateway listens on ${host}, beyond loopback, and METRICS_TOKEN is unset. Set METRICS_TOKEN and scrape with Authorization: Bearer <METRICS_TOKEN>, or listen on 127.0.0.1`;

/** `GET /metrics` in Prometheus' text format, outside the API's key authentication. */
export function metricsRoute({ metrics, token, host }: MetricsRouteOptions) {
  const access = metricsAccessOf(token, host);
  return async (app: FastifyInstance) => {
    if (access === 'refused') app.log.warn({ host }, `${REFUSED(host)} (docs/operations.md, "Metrics")`);
    app.get('/metrics', { config: { auth: 'none' } }, async (request, reply) => {
      if (access === 'refused') return reply.code(403).send({ error: { code: 'metrics_token_required', message: REFUSED(host) } });
      if (token !== undefined) {
        const match = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
        if (!match || !timingSafeEqual(digest(match[1]!.trim()), digest(token)))
          return reply
            .code(401)
            .header('www-authenticate', 'Bearer')
            .send({ error: { code: 'unauthorized', message: '/metrics: send Authorization: Bearer <METRICS_TOKEN>' } });
      }
      return reply.type(metrics.contentType).send(await metrics.render());
    });
  };
}

/** METRICS_TOKEN from the environment; blank is unset. */
export function metricsTokenOf(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.METRICS_TOKEN?.trim();
  return value ? value : undefined;
}
