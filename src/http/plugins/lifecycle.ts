import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { GatewayError } from '../errors';
import { sendByPath } from '../intake/plugin';
import { SHUTDOWN_MESSAGE, type CallSignal } from '../../upstream/upstream-call';
import type { Drain } from '../../lifecycle/drain';
import type { Readiness } from '../../lifecycle/readiness';

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway's shutdown, as its requests see it (src/lifecycle). */
    drain?: Drain;
  }
}

/** Routes that still answer while the gateway drains: the probes (`/readyz` says 503 itself). */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

const untracked = () => {};

/** Registers an upstream call with the shutdown until the returned function is called. */
export function trackCall(request: FastifyRequest, call: CallSignal): () => void {
  return request.server.drain?.track(call) ?? untracked;
}

/**
 * While the gateway drains: a request that arrives on a connection kept alive is refused with
 * 503 `gateway_shutting_down` in its endpoint's shape (new connections are no longer accepted at
 * all), and every answer, those of the calls in flight included, closes its connection. Registered
 * before any other hook, so that a refused request costs nothing (no authentication, no rate limit,
 * no call-log row).
 */
export const drainPlugin = fp<{ drain: Drain }>(
  async (app: FastifyInstance, { drain }) => {
    app.decorate('drain', drain);
    app.addHook('onRequest', (request, reply, done) => {
      if (!drain.draining) return done();
      reply.header('connection', 'close');
      if (PROBES.has(request.routeOptions.url ?? '')) return done();
      sendByPath(request, reply, new GatewayError('gateway_shutting_down', SHUTDOWN_MESSAGE));
      done();
    });
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (drain.draining) reply.header('connection', 'close');
      done(null, payload);
    });
  },
  { name: 'gateway-drain' },
);

/** `GET /readyz`: 200 when every part the gateway needs answers, else 503 naming the failing
 * parts (see Readiness). No API key, no rate limit, never billed. */
export function readyzRoute(readiness: Readiness) {
  return async (app: FastifyInstance) => {
    app.get('/readyz', { config: { auth: 'none' } }, async (_request, reply) => {
      const verdict = await readiness.verdict();
      return reply.code(verdict.ready ? 200 : 503).header('cache-control', 'no-store').send(verdict.report);
    });
  };
}
