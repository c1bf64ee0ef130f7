import { channelDispatcher, shapedHeaders, withChannelQuery } from '../../../upstream/shaping';
import type { Dispatcher } from 'undici';
import {
  imagesAuthHeaders,
  imagesErrorMessage,
  imagesPath,
  imagesResult,
  imagesUpstreamBody,
  type ImageRequest,
  type ImagesResult,
} from '../../../upstream/protocols/images';
import type { Route } from '../../../channels/routing';
import { IMAGE_ANSWER_BYTES, textWithin } from '../../../upstream/bounded-body';
import { postHop, type HopResult } from '../../../upstream/hop';
import { scrubberOf } from '../../../upstream/scrub';
import { isObject, tryJson } from '../../../upstream/json';
import { unreadable, upstreamTarget, type CallSignal, type Failure } from '../../../upstream/upstream-call';
import type { UpstreamAttempt } from '../../../tracing/spans';
import { failedLadder, tryChannels, type FailedLadder } from '../../channel-ladder';
import type { CallFacts } from '../../billable-call';

/** The spec's image timings: one upstream hop, the whole channel ladder, and when the
 * gateway commits to a 200 and keeps the connection alive (synchronous mode only). */
export interface ImageTimings {
  readonly hopMs: number;
  readonly ladderMs: number;
  readonly keepAliveAfterMs: number;
  /** Whitespace is written this often once the connection is kept alive. */
  readonly keepAliveEveryMs: number;
}

export const IMAGE_TIMINGS: ImageTimings = { hopMs: 240_000, ladderMs: 280_000, keepAliveAfterMs: 90_000, keepAliveEveryMs: 15_000 };

/** Hosted image links live 24 hours: the `expires_at` the gateway adds when the upstream gives none. */
export const HOSTED_TTL_S = 24 * 3600;

export interface LadderDeps {
  readonly timings: ImageTimings;
  readonly now: () => number;
  readonly dispatcher?: Dispatcher;
}

/** `abandoned`: the client left (synchronous mode; checked before each channel). `observed`: false for a
 * task's run after its request was answered (src/http/channel-ladder.ts). */
export interface LadderOptions {
  readonly abandoned?: () => boolean;
  readonly observed?: boolean;
}

/** How a ladder ended: an answer, the last failure, or (synchronous mode) a client that left first. */
export type LadderOutcome =
  | { readonly kind: 'answered'; readonly text: string; readonly result: ImagesResult; readonly traced: UpstreamAttempt | null }
  /** `failure` null: no channel could be reached. */
  | { readonly kind: 'failed'; readonly failure: Failure | null }
  | { readonly kind: 'abandoned' };

/**
 * The channel ladder of one image call, the same in both modes: up to three channels in route
 * order, each hop within `hopMs` and all of them within `call` (the ladder's budget, which the
 * caller also ends on a disconnect or a shutdown). A 5xx or a failed connection tries the next channel;
 * a 4xx is the caller's problem (another channel would say the same) and ends it, as do a time-out and
 * a 2xx the gateway cannot read (the upstream may have made, and charged, the images: `mayHaveBeenAccepted`).
 * `facts` counts the attempts and names the channel tried last, for the call-log row.
 */
export async function runImageLadder(
  deps: LadderDeps,
  facts: CallFacts,
  routes: readonly Route[],
  image: ImageRequest,
  call: CallSignal,
  options: LadderOptions = {},
): Promise<LadderOutcome> {
  const abandoned = options.abandoned ?? (() => false);
  const observed = options.observed ?? true;
  const outcome = await tryChannels({ facts, stages: [{ routes }], call, attempt: (route, traced) => send(deps, route, image, call, traced), stopped: abandoned, observed });
  if (abandoned()) return { kind: 'abandoned' };
  if (outcome.ok) return { kind: 'answered', text: outcome.value.text, result: outcome.value.result, traced: outcome.traced };
  return { kind: 'failed', failure: outcome.failure };
}

/** What an answered ladder delivered, as billed and logged. */
export interface Delivered {
  readonly count: number;
  readonly urls: readonly string[];
  /** The links' expiry: the upstream's, else created + 24 h when there are links; null without links. */
  readonly expiresAt: number | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/**
 * The final answer of an image call as the client gets it, the same bytes in both modes: the
 * upstream's JSON (with the gateway's `expires_at` when it gave none), an upstream error passed
 * through (in the chat error shape when the upstream spoke another), or the gateway's own error.
 */
export type ImageAnswer =
  | { readonly ok: true; readonly status: number; readonly body: string; readonly delivered: Delivered }
  /** The call-log's error code and message ride along; a failure of the gateway's own (`gatewayError`) is thrown
   * by the synchronous mode before the keep-alive point, so that it is rendered like every other error. */
  | ({ readonly ok: false } & FailedLadder);

export function imageAnswer(outcome: Exclude<LadderOutcome, { kind: 'abandoned' }>, now: number): ImageAnswer {
  if (outcome.kind === 'answered') {
    const result = outcome.result;
    const expiresAt = result.expiresAt ?? (result.urls.length > 0 ? (result.created ?? now) + HOSTED_TTL_S : null);
    return {
      ok: true,
      status: 200,
      body: withExpiry(outcome.text, result.expiresAt === null ? expiresAt : null),
      delivered: { count: result.count, urls: result.urls, expiresAt, inputTokens: result.inputTokens, outputTokens: result.outputTokens },
    };
  }
  return { ok: false, ...failedLadder(outcome.failure, imagesErrorMessage) };
}

/** The upstream answer with the gateway's `expires_at` for hosted links, next to `created`. */
function withExpiry(text: string, expiresAt: number | null): string {
  if (expiresAt === null) return text;
  const json = tryJson(text);
  if (!json || typeof json !== 'object' || Array.isArray(json)) return text;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(json)) {
    out[k] = v;
    if (k === 'created') out.expires_at = expiresAt;
  }
  if (!('expires_at' in out)) out.expires_at = expiresAt;
  return JSON.stringify(out);
}

/** An answer as the ladder delivers it: the upstream's text and what it holds. */
interface Answered {
  readonly text: string;
  readonly result: ImagesResult;
}

async function send(deps: LadderDeps, route: Route, image: ImageRequest, call: CallSignal, traced: UpstreamAttempt | null): Promise<HopResult<Answered>> {
  const { body, contentType } = imagesUpstreamBody(image, route.upstreamModel);
  // Outside the hop: a fault of the gateway's own is a 500 with its hold released, not an upstream failure.
  // Shaped by the channel's config (src/upstream/shaping.ts): query, auth header, extra headers, proxy.
  const target = upstreamTarget(route.channel.base_url, withChannelQuery(route.channel, imagesPath(image.endpoint)));
  const headers: Record<string, string> = { ...(contentType ? { 'content-type': contentType } : {}), ...shapedHeaders(route.channel, imagesAuthHeaders(route.channel.api_key)) };
  traced?.propagate(headers);
  const dispatcher = channelDispatcher(route.channel) ?? deps.dispatcher;
  const hop = await postHop({ target, headers, body, timeoutMs: deps.timings.hopMs, call, dispatcher, scrub: scrubberOf(route.channel), onStatus: (status) => traced?.answered(status) }, (response) =>
    textWithin(response.body, IMAGE_ANSWER_BYTES),
  );
  if (!hop.ok) return hop;
  const json = tryJson(hop.value);
  // A 2xx says the upstream made the images: one that is not an images answer is no answer to pass on,
  // and not one to ask of another channel either (it would make, and the operator pay for, them twice).
  if (!isObject(json) || !Array.isArray(json.data)) return { ok: false, failure: unreadable('not a JSON object with a `data` array') };
  return { ok: true, value: { text: hop.value, result: imagesResult(json) } };
}
