import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import type { CallRecord } from '../events/catalog';
import { logAccess } from './access-log';
import { CallMeter } from './call-meter';
import type { GatewayMetrics, RouteSeries } from './metrics';

declare module 'fastify' {
  interface FastifyInstance {
    /** This gateway's metrics (src/metrics). */
    readonly gatewayMetrics: GatewayMetrics;
  }
  interface FastifyRequest {
    /** A billable request's timings (routes with `config.callLog`), from its route's first hook on;
     * null elsewhere, and for a request refused before it (authentication, rate limits). */
    callMeter: CallMeter | null;
  }
}

/** 499: nginx's "client closed request", for a response the client did not wait for. */
const CLIENT_CLOSED = 499;

type Hook = (...args: never[]) => unknown;

/** Adds a hook to one route, before its own hooks of that kind. */
function prependRouteHook(route: RouteOptions, name: 'onRequest' | 'onResponse', hook: Hook) {
  const existing = route[name] as unknown;
  const hooks = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
  (route as unknown as Record<string, unknown[]>)[name] = [hook, ...hooks];
}

/**
 * Counts every request by route pattern, and gives each billable request its CallMeter. Hooks are
 * bound per route when it is registered (its labels with them), so a request pays for no label
 * lookup but its status. Registered before every route (and before authentication, whose refusals
 * it counts too).
 */
export const metricsPlugin = fp<{ metrics: GatewayMetrics }>(
  async (app: FastifyInstance, { metrics }) => {
    app.decorate('gatewayMetrics', metrics);
    app.decorateRequest('callMeter', null);

    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const series = new Map<string, RouteSeries>(methods.map((method) => [method, metrics.route(method, route.url)]));
      const seriesOf = (request: FastifyRequest) => {
        let counted = series.get(request.method);
        if (!counted) {
          counted = metrics.route(request.method, route.url);
          series.set(request.method, counted);
        }
        return counted;
      };
      // Client and admin POSTs take an Idempotency-Key.
      const replayable = methods.includes('POST');
      // A response that ended ('finish'; or failed, 'error').
      prependRouteHook(route, 'onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
        const meter = request.callMeter;
        const status = reply.statusCode;
        const elapsedMs = reply.elapsedTime;
        const counted = seriesOf(request);
        counted.responded(status, elapsedMs / 1000);
        const replayed = replayable && reply.getHeader('idempotency-replayed') === 'true';
        if (replayed) counted.replayed();
        if (meter) {
          meter.responseCounted = true;
          // A success with no record yet is a stream whose settlement follows its last byte; an
          // async task's record comes when the task ends, and a replay has none of its own.
          const awaitRecord = status < 400 && !request.callRecorded && !replayed;
          meter.responded((call) => logAccess(request, status, elapsedMs, call), awaitRecord);
        } else logAccess(request, status, elapsedMs, null);
        done();
      });
      // A billable response the client closed before it ended (a stream it left, an answer it did
      // not wait for) never reaches onResponse, nor, for a request with a body, fastify's
      // onRequestAbort: its socket's 'close' tells. Other routes answer at once, and their
      // requests do not pay for a listener each.
      if (route.config?.callLog)
        prependRouteHook(route, 'onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
          const meter = new CallMeter(metrics, performance.now() - reply.elapsedTime);
          request.callMeter = meter;
          const raw = reply.raw;
          raw.once('close', () => {
            if (raw.writableFinished || meter.responseCounted) return;
            meter.responseCounted = true;
            const elapsedMs = performance.now() - meter.startedAt;
            seriesOf(request).responded(CLIENT_CLOSED, elapsedMs / 1000);
            meter.responded((call) => logAccess(request, CLIENT_CLOSED, elapsedMs, call), !request.callRecorded);
          });
          done();
        });
    });

    // A request no route took (fastify's 404 handler runs the instance's own hooks).
    const unmatched = new Map<string, RouteSeries>();
    app.addHook('onResponse', (request, reply, done) => {
      if (request.is404) {
        let counted = unmatched.get(request.method);
        if (!counted) {
          counted = metrics.route(request.method, 'unmatched');
          unmatched.set(request.method, counted);
        }
        counted.responded(reply.statusCode, reply.elapsedTime / 1000);
        logAccess(request, reply.statusCode, reply.elapsedTime, null);
      }
      done();
    });
  },
  { name: 'metrics' },
);

/** A billable call's outcome, once per call: what its CallMeter measured, or (refused before it
 * had one) its record's own latency. Called where the record is built (src/http/billable-call.ts). */
export function countCall(request: FastifyRequest, startedAt: number, record: CallRecord): void {
  const meter = request.callMeter ?? new CallMeter(request.server.gatewayMetrics, startedAt);
  request.callMeter = meter;
  meter.finish(record);
}
