import type { UrlProbe } from '../../../media-check/port';
import type { Dispatcher } from 'undici';
import type { ModelRegistry } from '../../../config/registry';
import type { HostedOutputs } from '../../../objects/hosted';
import type { TaskQueries } from '../../../projections/tasks/queries';
import type { BackgroundRuns } from '../../../tasks/background';
import type { UpstreamAttempt } from '../../../tracing/spans';
import type { HopResult } from '../../../upstream/hop';
import { requestSpeech, requestVoiceClone, speechUpstreamBody, voiceCloneBody, type ClonedVoice, type SpeechAudio, type SpeechVoice } from '../../../upstream/protocols/speech';
import type { Route, Router } from '../../../channels/routing';
import type { CallSignal } from '../../../upstream/upstream-call';
import type { TaskSubmitDeps } from '../tasks/task-submit';

// What the speech and voice routes share: their dependencies, their time limits, and one attempt of each
// upstream call on one channel (the channel ladder runs them).

/**
 * A speech or clone call's time limits: one upstream hop, and the whole ladder of up to three channels.
 * Speech audio cannot be kept alive with whitespace as image JSON is, so the ladder stays within what
 * clients and proxies wait for a synchronous answer (the chat endpoints' 180 s).
 */
export interface SpeechTimings {
  readonly hopMs: number;
  readonly ladderMs: number;
}

export const SPEECH_TIMINGS: SpeechTimings = { hopMs: 120_000, ladderMs: 180_000 };

/** How long an asynchronous speech task (and a voice clone) may run before the sweep expires it,
 * refunded: the whole ladder, the hosted copy, and time to spare. */
export const SPEECH_TASK_LIFETIME_S = 300;

/** A synchronous call's hold outlives its ladder by this much: the call's own settlement or release
 * closes it first, the hold sweeper is the backstop. */
export const SPEECH_HOLD_GRACE_S = 120;

export interface SpeechDeps extends Pick<TaskSubmitDeps, 'ledger' | 'tasks' | 'now' | 'viewsAt'> {
  readonly registry: ModelRegistry;
  readonly router: Router;
  readonly queries: TaskQueries;
  /** Runs asynchronous speech tasks in this process. */
  readonly background: BackgroundRuns;
  /** Where asynchronous speech audio goes (absent: `async: true` is refused). */
  readonly hosted?: HostedOutputs | undefined;
  /** PUBLIC_BASE_URL: the base of hosted links (default: the address the request came in on). */
  readonly publicBaseUrl?: string | undefined;
  readonly timings?: Partial<SpeechTimings> | undefined;
  readonly dispatcher?: Dispatcher | undefined;
  /** The URL policy on a voice clone's `audio_url` (src/media-check/url-policy.ts). */
  readonly mediaProbe?: UrlProbe | undefined;
}

export const speechTimings = (deps: SpeechDeps): SpeechTimings => ({ ...SPEECH_TIMINGS, ...deps.timings });

/** Media routes: the chat error shape, `x-gateway-trace` on every answer, an API key. */
export { MEDIA_ROUTE } from '../tasks/task-views';

/** Characters billed: Unicode code points (an emoji is one, as the upstream counts it; UTF-16 units would
 * count it twice). */
export const characterCount = (text: string): number => {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
};

/** ceil(characters × price per 1,000 characters / 1,000), in nano-dollars: the hold and the charge. */
export function speechCost(characters: number, perThousand: bigint): bigint {
  return (BigInt(characters) * perThousand + 999n) / 1000n;
}

/** One speech attempt on one channel, with the voice as that upstream knows it. */
export function speakOn(deps: SpeechDeps, fields: Readonly<Record<string, unknown>>, voice: SpeechVoice, call: CallSignal) {
  return (route: Route, traced: UpstreamAttempt | null): Promise<HopResult<SpeechAudio>> => {
    // Built before the hop: a fault of the gateway's own is not an upstream failure.
    const body = speechUpstreamBody(fields, voice, route.upstreamModel);
    const headers: Record<string, string> = {};
    traced?.propagate(headers);
    return requestSpeech(route.channel, body, {
      call,
      timeoutMs: speechTimings(deps).hopMs,
      dispatcher: deps.dispatcher,
      headers,
      onStatus: (status) => traced?.answered(status),
    });
  };
}

/** One clone attempt on one channel. */
export function cloneOn(deps: SpeechDeps, fields: Readonly<Record<string, unknown>>, call: CallSignal) {
  return (route: Route, traced: UpstreamAttempt | null): Promise<HopResult<ClonedVoice>> => {
    const body = voiceCloneBody(fields);
    const headers: Record<string, string> = {};
    traced?.propagate(headers);
    return requestVoiceClone(route.channel, body, {
      call,
      timeoutMs: speechTimings(deps).hopMs,
      dispatcher: deps.dispatcher,
      headers,
      onStatus: (status) => traced?.answered(status),
    });
  };
}
