import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ConcurrencySlot, LimiterUnavailableError, type Admission, type LimitState, type RateLimiter } from '../../limits';
import { GatewayError, sendError } from '../errors';

/** Per-route rate-limit setting, in the route's `config`. */
export interface RateLimitConfig {
  /** false: the route never counts (key balance and the billing views, per the spec). */
  readonly rateLimited?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig extends RateLimitConfig {}
}

/** The client API the spec limits; the wiki, MCP, usage and admin routes are not part of it. */
const LIMITED_PREFIXES = ['/v1/', '/v1beta/'];

export const RATE_LIMIT_HEADERS = [
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-concurrency',
  'x-ratelimit-remaining-concurrency',
] as const;

/** The x-ratelimit-* headers of the dimensions the account limits; an unlimited dimension
 * has no number to show, so its headers are left out. Reset is whole seconds until the
 * oldest request in the window leaves it (when the next slot comes back), rounded up. */
export function rateLimitHeaders(state: LimitState): Record<string, string> {
  const headers: Record<string, string> = {};
  if (state.requests) {
    headers['x-ratelimit-limit-requests'] = String(state.requests.limit);
    headers['x-ratelimit-remaining-requests'] = String(state.requests.remaining);
    headers['x-ratelimit-reset-requests'] = String(Math.ceil(state.requests.resetMs / 1000));
  }
  if (state.concurrency) {
    headers['x-ratelimit-limit-concurrency'] = String(state.concurrency.limit);
    headers['x-ratelimit-remaining-concurrency'] = String(state.concurrency.remaining);
  }
  return headers;
}

function refusal(admission: Extract<Admission, { admitted: false }>): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(admission.retryAfterMs / 1000));
  const reasons = admission.exceeded.map((dimension) =>
    dimension === 'requests'
      ? `${admission.state.requests!.limit} requests per minute`
      : `${admission.state.concurrency!.limit} concurrent requests (concurrency)`,
  );
  const message = `Rate limit exceeded: this account allows ${reasons.join(' and ')}. Retry after ${retryAfter} s.`;
  return new GatewayError('rate_limit_exceeded', message, { ...rateLimitHeaders(admission.state), 'retry-after': String(retryAfter) });
}

export interface RateLimitOptions {
  readonly limiter: RateLimiter;
  /** Told of each 429 of the account's own limits, with the dimensions exceeded (metrics). */
  readonly onRefused?: (exceeded: Extract<Admission, { admitted: false }>['exceeded']) => void;
}

/**
 * Per-account requests per minute and concurrency on every authenticated /v1 and /v1beta
 * route (registered after auth: a request that fails authentication is not counted).
 */
export const rateLimitPlugin = fp<RateLimitOptions>(
  async (app: FastifyInstance, { limiter, onRefused }) => {
    // Requests admitted under a limit: their non-2xx answers lose the x-ratelimit-* headers,
    // so an upstream 429 passed through is not mistaken for the account's own limit.
    const admitted = new WeakSet<FastifyRequest>();
    const slots = new WeakMap<FastifyRequest, ConcurrencySlot>();

    async function admit(request: FastifyRequest, reply: FastifyReply, caller: NonNullable<FastifyRequest['caller']>) {
      const { limits } = caller.wallet;
      let admission: Admission;
      try {
        admission = await limiter.admit(caller.accountId, limits);
      } catch (error) {
        // Fail open: an unreachable Redis must not take the whole API down with it. A known outage
        // was logged once by the limiter; anything else is logged here.
        if (!(error instanceof LimiterUnavailableError)) request.log.error({ err: error }, 'rate limiter unavailable; request let through unlimited');
        return;
      }
      if (!admission.admitted) {
        onRefused?.(admission.exceeded);
        // Refused before the body is read; plugins/refused-calls.ts reads its model for the row.
        return sendError(request, reply, refusal(admission));
      }

      admitted.add(request);
      // Set before the handler: streaming replies are hijacked and write these in writeHead.
      reply.headers(rateLimitHeaders(admission.state));
      if (admission.leaseId !== null) {
        const slot = new ConcurrencySlot(limiter, caller.accountId, admission.leaseId, (error) => {
          // A lease that cannot be released expires by itself; an outage was logged once already.
          if (!(error instanceof LimiterUnavailableError)) request.log.warn({ err: error }, 'could not renew or release a concurrency lease');
        });
        slots.set(request, slot);
        // 'close' fires on completion and on a client disconnect, hijacked streams included.
        reply.raw.once('close', () => slot.release());
      }
    }

    // Callback hooks: most accounts have no limits, and their requests should not pay a
    // promise per hook for that.
    app.addHook('onRequest', (request, reply, done) => {
      const caller = request.caller;
      if (!caller || reply.sent) return done();
      const route = request.routeOptions.url ?? '';
      if (!LIMITED_PREFIXES.some((prefix) => route.startsWith(prefix))) return done();
      if (((request.routeOptions.config ?? {}) as RateLimitConfig).rateLimited === false) return done();
      // Authentication read the wallet at most a second behind the log: limits set through
      // another instance apply here within that time.
      const { limits } = caller.wallet;
      if (limits.rpm === null && limits.concurrency === null) return done();
      admit(request, reply, caller).then(() => done(), done);
    });

    app.addHook('onSend', (request, reply, payload, done) => {
      if (admitted.has(request) && (reply.statusCode < 200 || reply.statusCode >= 300)) {
        for (const name of RATE_LIMIT_HEADERS) reply.removeHeader(name);
      }
      done(null, payload);
    });

    // Injected requests (light-my-request) may not emit 'close'; release is idempotent.
    app.addHook('onResponse', (request, _reply, done) => {
      slots.get(request)?.release();
      done();
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
