import type { FastifyReply } from 'fastify';
import { attemptAnswered, attemptFailed } from '../channels/attempt';
import { fallsBack, mayHaveBeenAccepted } from '../channels/failover';
import { traceAttempt, type UpstreamAttempt } from '../tracing/spans';
import type { HopResult } from '../upstream/hop';
import { tryJson } from '../upstream/json';
import type { Route } from '../channels/routing';
import type { CallSignal, Failure } from '../upstream/upstream-call';
import { failureSummary, type CallFacts } from './billable-call';
import { errorBody, GatewayError, upstreamErrorBody, type ErrorCode } from './errors';
import type { ErrorShape } from '../upstream/contract';

/** One model of a call's fallback chain and the channels it may try (a media call has a single stage). */
export interface LadderStage {
  readonly routes: readonly Route[];
}

/** Every billable call's channels (chat, images, speech, voice clones, task submissions), tried in order until one answers. */
export interface ChannelLadder<T, S extends LadderStage = LadderStage> {
  /** Attempts and the last channel tried are counted here (the call-log row reads them). */
  readonly facts: CallFacts;
  /** The model asked for, then its fallbacks (src/config/fallbacks.ts): a stage after the first is tried
   * only when the one before ended as `fallsBack` allows. */
  readonly stages: readonly S[];
  /** The whole call's signal: once it expires or the gateway shuts down, no further channel is tried. */
  readonly call: CallSignal;
  /** One attempt on one channel (the `rung`-th route of `stage`); `traced` is its span (null when the request is not traced). */
  readonly attempt: (route: Route, traced: UpstreamAttempt | null, stage: S, rung: number) => Promise<HopResult<T>>;
  /** Given each attempt's result before it is metered and judged: the chat relay awaits its early hold's
   * commit here (a refusal thrown ends the call) and reads a non-streamed answer, which may still fail. */
  readonly answered?: (result: HopResult<T>) => Promise<HopResult<T>>;
  /** Checked before each channel: true ends the ladder (the client left, nobody to answer). */
  readonly stopped?: () => boolean;
  /** false for a run after the request was answered (an asynchronous task): the request's meter and
   * span are closed by then, so the attempts are not measured on them. Default true. */
  readonly observed?: boolean;
  /** What a failure that may have been accepted upstream (`mayHaveBeenAccepted`) does: `stops` the ladder
   * (default: a paid generation is never made twice), or is `resent` like any other (chat: a completion
   * has no effect outside its answer). */
  readonly accepted?: 'stops' | 'resent';
}

export type LadderOutcome<T, S extends LadderStage = LadderStage> =
  | { readonly ok: true; readonly value: T; readonly route: Route; readonly traced: UpstreamAttempt | null; readonly stage: S; readonly rung: number }
  /** `failure` is null when no channel was tried (the client left first); `stage` and `rung` name the last attempt. */
  | { readonly ok: false; readonly failure: Failure | null; readonly stage: S | null; readonly rung: number };

/**
 * Failover as src/channels/failover.ts decides it (a 5xx, a failed connection or a refusal of the
 * channel's credentials tries the next channel, at most three as the router gives them; another 4xx,
 * the call's own budget and the shutdown end the stage), then the next model of the chain when `fallsBack`
 * allows, but never after a time-out or a 2xx it could not read unless the ladder resends those
 * (`mayHaveBeenAccepted`: the upstream may be generating what it was sent); each attempt metered, traced
 * and its outcome told to its channel's health. Whatever the attempt throws (a fault of the gateway's own) is thrown.
 */
export async function tryChannels<T, S extends LadderStage = LadderStage>(ladder: ChannelLadder<T, S>): Promise<LadderOutcome<T, S>> {
  const { facts, call, stages } = ladder;
  const request = facts.request;
  const observed = ladder.observed ?? true;
  const resent = ladder.accepted === 'resent';
  // Whose call it is: one account's failures alone never cool or disable a channel for the others.
  const account = request.caller?.accountId ?? null;
  let failure: Failure | null = null;
  let last: S | null = null;
  let lastRung = -1;
  stages: for (let s = 0; s < stages.length; s++) {
    // A fallback is tried only when the previous model's channels all failed in a way another model may not.
    if (s > 0 && !(failure !== null && fallsBack(failure, call))) break;
    const stage = stages[s]!;
    const routes = stage.routes;
    for (let rung = 0; rung < routes.length; rung++) {
      if (ladder.stopped?.()) break stages;
      const route = routes[rung]!;
      facts.attempts += 1;
      facts.channelId = route.channel.id;
      if (observed) request.callMeter?.attempt();
      const traced = observed ? traceAttempt(request, route, facts.attempts) : null;
      const startedAt = performance.now();
      let result = await ladder.attempt(route, traced, stage, rung);
      if (ladder.answered) result = await ladder.answered(result);
      if (observed) request.callMeter?.answered(route.channel.id, result.ok ? null : result.failure);
      if (result.ok) {
        attemptAnswered(route, startedAt, account);
        return { ok: true, value: result.value, route, traced, stage, rung };
      }
      traced?.failed(result.failure);
      const verdict = attemptFailed(route, result.failure, call, startedAt, account);
      failure = verdict.failure;
      last = stage;
      lastRung = rung;
      if (!resent && mayHaveBeenAccepted(result.failure)) break stages;
      if (!verdict.next) continue stages;
    }
  }
  return { ok: false, failure, stage: last, rung: lastRung };
}

/** How a ladder that no channel answered ends for the client (Errors, rules 5 and 6), and on its call-log row. */
export interface FailedLadder {
  readonly status: number;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly code: string;
  readonly message: string;
  /** A failure of the gateway's side (a time-out 504, a failed connection 502, no channel or the shutdown
   * 503), thrown where the answer may still be rendered like every other error; null for an upstream status. */
  readonly gatewayError: GatewayError | null;
}

/**
 * The pass-through rule of every ladder: an upstream's error status (the 4xx that ended the ladder, or the
 * last 5xx or 429) reaches the client with its status, its message and its Retry-After; every other failure
 * is the gateway's own error. The body is the message in the client's error `shape` (the chat relay's
 * protocols); without one (media, OpenAI's shape), the upstream's body unchanged when it speaks that shape.
 * `failure` null: no channel could be reached.
 */
export function failedLadder(failure: Failure | null, errorMessage: (body: unknown) => string | null, shape?: ErrorShape): FailedLadder {
  const f = failure ?? { kind: 'unreachable' as const, message: 'no channel could be reached' };
  const { status, code, message } = failureSummary(f, errorMessage);
  if (f.kind === 'status') {
    const body = shape === undefined && (tryJson(f.body) as { error?: { message?: unknown } } | null)?.error?.message !== undefined ? f.body : JSON.stringify(upstreamErrorBody(shape ?? 'chat', status, message));
    return { status, body, headers: f.headers['retry-after'] ? { 'retry-after': f.headers['retry-after'] } : {}, code, message, gatewayError: null };
  }
  const error = new GatewayError(code as ErrorCode, message);
  return { status: error.status, body: JSON.stringify(errorBody('chat', error)), headers: {}, code, message, gatewayError: error };
}

/** A failed ladder's answer on a reply that has not started: the gateway's own error thrown (rendered in the
 * route's shape by the error handler), an upstream status sent. */
export function sendFailed(reply: FastifyReply, failed: FailedLadder): FastifyReply {
  if (failed.gatewayError) throw failed.gatewayError;
  for (const name in failed.headers) reply.header(name, failed.headers[name]);
  return reply.code(failed.status).type('application/json').send(failed.body);
}
