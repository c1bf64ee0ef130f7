import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { GatewayMetrics } from './metrics';

export interface MetricsRouteOptions {
  readonly metrics: GatewayMetrics;
  /** METRICS_TOKEN: when set, a scrape must send `Authorization: Bearer <token>`. */
  readonly token: string | undefined;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** `GET /metrics` in Prometheus' text format, outside the API's key authentication. */
export function metricsRoute({ metrics, token }: MetricsRouteOptions) {
  return async (app: FastifyInstance) => {
    app.get('/metrics', { config: { auth: 'none' } }, async (request, reply) => {
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
