import { attemptAnswered, attemptFailed } from '../channels/attempt';
import { mayHaveBeenAccepted } from '../channels/failover';
import { traceAttempt, type UpstreamAttempt } from '../tracing/spans';
import type { HopResult } from '../upstream/hop';
import { tryJson } from '../upstream/json';
import type { Route } from '../channels/routing';
import type { CallSignal, Failure } from '../upstream/upstream-call';
import type { CallFacts } from './billable-call';
import { upstreamErrorBody } from './errors';

/** A synchronous billable call's channels, tried in order until one answers (images, speech, voice clones). */
export interface ChannelLadder<T> {
  /** Attempts and the last channel tried are counted here (the call-log row reads them). */
  readonly facts: CallFacts;
  readonly routes: readonly Route[];
  /** The whole call's signal: once it expires or the gateway shuts down, no further channel is tried. */
  readonly call: CallSignal;
  /** One attempt on one channel; `traced` is its span (null when the request is not traced). */
  readonly attempt: (route: Route, traced: UpstreamAttempt | null) => Promise<HopResult<T>>;
  /** Checked before each channel: true ends the ladder (the client left, nobody to answer). */
  readonly stopped?: () => boolean;
  /** false for a run after the request was answered (an asynchronous task): the request's meter and
   * span are closed by then, so the attempts are not measured on them. Default true. */
  readonly observed?: boolean;
}

export type LadderOutcome<T> =
  | { readonly ok: true; readonly value: T; readonly route: Route; readonly traced: UpstreamAttempt | null }
  /** `failure` is null when no channel was tried (the client left first). */
  | { readonly ok: false; readonly failure: Failure | null };

/**
 * Failover as src/channels/failover.ts decides it (a 5xx, a failed connection or a refusal of the
 * channel's credentials tries the next channel, at most three as the router gives them; another 4xx,
 * the call's own budget and the shutdown end the ladder), but never after a time-out or a 2xx it could
 * not read (`mayHaveBeenAccepted`: the upstream may be generating what it was sent); each attempt's outcome
 * told to its channel's health. Whatever the attempt throws (a fault of the gateway's own) is thrown.
 */
export async function tryChannels<T>(ladder: ChannelLadder<T>): Promise<LadderOutcome<T>> {
  const { facts, call } = ladder;
  const request = facts.request;
  const observed = ladder.observed ?? true;
  // Whose call it is: one account's failures alone never cool or disable a channel for the others.
  const account = request.caller?.accountId ?? null;
  let failure: Failure | null = null;
  for (const route of ladder.routes) {
    if (ladder.stopped?.()) break;
    facts.attempts += 1;
    facts.channelId = route.channel.id;
    if (observed) request.callMeter?.attempt();
    const traced = observed ? traceAttempt(request, route, facts.attempts) : null;
    const startedAt = performance.now();
    const result = await ladder.attempt(route, traced);
    if (observed) request.callMeter?.answered(route.channel.id, result.ok ? null : result.failure);
    if (result.ok) {
      attemptAnswered(route, startedAt, account);
      return { ok: true, value: result.value, route, traced };
    }
    traced?.failed(result.failure);
    const verdict = attemptFailed(route, result.failure, call, startedAt, account);
    failure = verdict.failure;
    if (!verdict.next || mayHaveBeenAccepted(result.failure)) break;
  }
  return { ok: false, failure };
}

/** An upstream's error answer as the client gets it (Errors, rule 5): unchanged when it speaks OpenAI's
 * error shape, else its status and message put into that shape. */
export function passedThrough(failure: Extract<Failure, { kind: 'status' }>, message: string): string {
  return (tryJson(failure.body) as { error?: unknown } | null)?.error !== undefined ? failure.body : JSON.stringify(upstreamErrorBody('chat', failure.status, message));
}
