import type { FastifyRequest } from 'fastify';
import type { Route } from '../channels/routing';
import type { Outcome, SettlementFacts, UpstreamAttempt } from './request';

export type { UpstreamAttempt };

/**
 * One call per place a child span starts. Each returns at once (the work's own value) when the
 * request carries no trace: with tracing off, a property read per call site.
 */

/** `gateway.authenticate`: returns the `done` to call instead of the hook's (the same one untraced).
 * `refusal` reads, when the hook is done, the code of the error the request was refused with (if any). */
export function traceAuthentication<Done extends (error?: Error) => void>(request: FastifyRequest, done: Done, refusal: () => string | undefined): Done {
  return request.trace ? request.trace.authentication(request, done, refusal) : done;
}

/** `gateway.reserve` of a hold decided early (a chat call): ends at its commit. */
export function traceHold<H extends { readonly decided: Promise<Outcome>; readonly committed: Promise<Outcome> }>(
  request: FastifyRequest,
  facts: { readonly amount: bigint; readonly holdId: string },
  reserve: () => H,
): H {
  return request.trace ? request.trace.hold(facts, reserve) : reserve();
}

/** `gateway.reserve` of a hold awaited whole (an image call). */
export function traceReservation<R extends Outcome & { readonly holdId?: string }>(
  request: FastifyRequest,
  facts: { readonly amount: bigint; readonly holdId?: string },
  reserve: () => Promise<R>,
): Promise<R> {
  return request.trace ? request.trace.reservation(facts, reserve) : reserve();
}

/** `gateway.upstream`: null when the request is not traced. */
export function traceAttempt(request: FastifyRequest, route: Route, attempt: number): UpstreamAttempt | null {
  return request.trace ? request.trace.attempt(route, attempt) : null;
}

/** `gateway.settle` (with an amount) or `gateway.release`. */
export function traceSettlement<R extends Outcome>(request: FastifyRequest, facts: SettlementFacts, settle: () => Promise<R>): Promise<R> {
  return request.trace ? request.trace.settlement(facts, settle) : settle();
}
