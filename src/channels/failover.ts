import type { Failure } from '../upstream/upstream-call';
import { isCredentialRefusal } from './credential-refusal';

/** What one failed attempt says about its channel (src/channels/health.ts turns it into state). */
export type AttemptOutcome =
  /** The channel answered; it may still have refused the request (a 400 is the caller's, not the channel's). */
  | { readonly kind: 'success'; readonly latencyMs: number }
  /** A failure of the channel: a 5xx, a refused or broken connection, a time-out, a 429 (its quota), a 2xx it
   * could not read. */
  | { readonly kind: 'failure'; readonly message: string; readonly latencyMs: number }
  /** The upstream refused the channel's own credentials (401/403, Gemini's 400 API_KEY_INVALID): a probe decides. */
  | { readonly kind: 'credentials'; readonly message: string };

/** The call an attempt belonged to, as far as the decision needs it: how its `CallSignal` (src/upstream/upstream-call.ts) stands. */
export interface CallSignalState {
  /** The call's whole budget ran out. */
  readonly expired: boolean;
  /** The gateway is shutting down and ended the call. */
  readonly shuttingDown: boolean;
  /** The call was stopped (client gone, hold refused): a failure then says nothing about the channel. */
  readonly aborted: boolean;
}

export interface Verdict {
  /** Whether the next channel is tried. */
  readonly next: boolean;
  /** What the attempt says about its channel; null: nothing (the gateway or the client ended it). */
  readonly outcome: AttemptOutcome | null;
  /** The failure as the client gets it if no other channel answers. */
  readonly failure: Failure;
}

/** The answer when every channel tried refused the channels' own credentials: not the client's key. */
export const NO_CHANNEL_LEFT = 'no channel of this model could serve the request: the upstream refused the gateway\'s credentials for every channel tried';

/**
 * The one failover rule of every ladder (chat relay, synchronous media, task submission, clip templates):
 * a 5xx, a failed connection or a time-out tries the next channel, as does an upstream refusal of the
 * credentials (a 401/403, Gemini's 400 API_KEY_INVALID: the channel's key, not the client's); any other
 * 4xx is the caller's and ends the ladder with the upstream's answer passed through (a 429 among them,
 * though it counts against the channel); the call's own budget and the gateway's shutdown end it too.
 */
export function failover(failure: Failure, call: CallSignalState, latencyMs = 0): Verdict {
  const ended = call.expired || call.shuttingDown;
  if (failure.kind === 'shutdown') return { next: false, outcome: null, failure };
  // The client left or the hold was refused: the abort is ours, not the channel's.
  if (call.aborted && !call.expired) return { next: !ended, outcome: null, failure };
  if (failure.kind === 'status') {
    if (isCredentialRefusal(failure))
      return { next: !ended, outcome: { kind: 'credentials', message: `upstream answered ${failure.status} to the channel's credentials${failure.status === 400 ? ' (API key not valid)' : ''}` }, failure: { kind: 'no_channel', message: NO_CHANNEL_LEFT } };
    if (failure.status === 429) return { next: false, outcome: { kind: 'failure', message: 'upstream answered 429 (rate or quota limit)', latencyMs }, failure };
    if (failure.status < 500) return { next: false, outcome: { kind: 'success', latencyMs }, failure };
    return { next: !ended, outcome: { kind: 'failure', message: `upstream answered ${failure.status}`, latencyMs }, failure };
  }
  if (failure.kind === 'no_channel') return { next: !ended, outcome: null, failure };
  return { next: !ended, outcome: { kind: 'failure', message: failure.message, latencyMs }, failure };
}

/**
 * Whether a model's fallbacks are tried after its ladder ended on `failure` (src/config/fallbacks.ts):
 * when the channels failed in a way another model may not (a failed or timed-out connection, a 5xx, a 429,
 * every channel's credentials refused), never on the caller's own 4xx, and not once the call's budget ran
 * out, the gateway is shutting down or the call was stopped.
 */
export function fallsBack(failure: Failure, call: CallSignalState): boolean {
  if (call.expired || call.shuttingDown || call.aborted) return false;
  switch (failure.kind) {
    case 'status':
      return failure.status >= 500 || failure.status === 429;
    case 'unreachable':
    case 'unreadable':
    case 'timeout':
    case 'no_channel':
      return true;
    default:
      return false;
  }
}

/**
 * Whether a failed attempt may still have been taken up by its upstream, so that sending the request
 * to another channel could have it generated, and paid for, twice: a time-out, where the request was
 * sent and no answer (or not all of it) came back, and a 2xx answer the gateway could not read (not the
 * JSON expected, no task or voice id, over its bound), where the upstream said it accepted the work. The
 * spec's failover is "on upstream 5xx or connection failure", answers in which the upstream said it did
 * not do the work; a paid generation (an image, speech, a voice clone, a task submission) that timed out
 * ends with 504 instead, one answered unreadably with 502, its hold released either way.
 *
 * Chat's ladder resends both (`accepted: 'resent'` in src/http/channel-ladder.ts): a completion has no
 * effect outside its answer, so an unreadable or late one is simply no answer; the client is billed once,
 * on the answer it gets (the operator may pay the first upstream too, as after any 5xx).
 */
export function mayHaveBeenAccepted(failure: Failure): boolean {
  return failure.kind === 'timeout' || failure.kind === 'unreadable';
}
