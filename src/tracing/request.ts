import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { CallRecord } from '../events/catalog';
import type { Route } from '../channels/routing';
import type { Failure } from '../upstream/upstream-call';

/**
 * What the request path knows of tracing: these interfaces and the plugin, nothing of OpenTelemetry.
 * The implementation (`tracer.ts`, `call-trace.ts`) and the SDK behind it are loaded only when
 * tracing is on: the SDK and exporter alone weigh about 20 MB of resident memory.
 */

/** A ledger answer: a result that may be a refusal. */
export interface Outcome {
  readonly ok: boolean;
  readonly error?: { readonly code: string };
}

export interface SettlementFacts {
  readonly holdId: string;
  /** The charge; absent for a release. */
  readonly amount?: bigint;
  readonly record: CallRecord;
  /** The attempt whose answer is billed: it ends here at the latest. */
  readonly attempt?: UpstreamAttempt | null;
}

/** The trace of one request: its span and the child spans of its call. */
export interface RequestTrace {
  /** `gateway.authenticate`, ended by the returned `done`. */
  authentication<Done extends (error?: Error) => void>(request: FastifyRequest, done: Done, refusal: () => string | undefined): Done;
  /** `gateway.reserve` of a hold decided early: ends at its commit. */
  hold<H extends { readonly decided: Promise<Outcome>; readonly committed: Promise<Outcome> }>(facts: { readonly amount: bigint; readonly holdId: string }, reserve: () => H): H;
  /** `gateway.reserve` of a hold awaited whole. */
  reservation<R extends Outcome & { readonly holdId?: string }>(facts: { readonly amount: bigint; readonly holdId?: string }, reserve: () => Promise<R>): Promise<R>;
  /** `gateway.upstream`: one attempt on one channel. */
  attempt(route: Route, attempt: number): UpstreamAttempt;
  /** `gateway.settle` / `gateway.release`: ends when the command's append does. */
  settlement<R extends Outcome>(facts: SettlementFacts, settle: () => Promise<R>): Promise<R>;
}

export interface UpstreamAttempt {
  /** Writes `traceparent` (and `tracestate`) naming this attempt as the upstream's caller. */
  propagate(headers: Record<string, string>): void;
  /** The upstream's status line arrived. */
  answered(status: number): void;
  /** No usable answer: ends the attempt as failed. */
  failed(failure: Failure): void;
  /** The answer was passed on (as far as it went). */
  end(): void;
}

/** One gateway instance's tracer. */
export interface RequestTracer {
  /** The trace of a request (null for a path never traced); it ends when the response's connection is done. */
  start(request: FastifyRequest, reply: FastifyReply): RequestTrace | null;
  /** Exports what is buffered and stops. */
  close(): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Null when tracing is off, or for a path that is never traced. */
    trace: RequestTrace | null;
  }
}

/**
 * A span per request, from its first hook (this plugin is registered first) to the moment its
 * connection is done with the response. Without a tracer no hook is registered: every request
 * only carries `trace: null`.
 */
export const tracingPlugin = fp<{ tracer: RequestTracer | null }>(
  async (app: FastifyInstance, { tracer }) => {
    app.decorateRequest('trace', null);
    if (!tracer) return;
    app.addHook('onRequest', (request, reply, done) => {
      request.trace = tracer.start(request, reply);
      done();
    });
  },
  { name: 'tracing' },
);
