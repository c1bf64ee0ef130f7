import type { Dispatcher } from 'undici';
import type { Scrub } from './scrub';
import { brokenAnswer, CallSignal, classify, statusFailure, upstreamAgent, type Failure } from './upstream-call';

/** What one upstream request gave: the answer read, or why there was none. */
export type HopResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: Failure };

/** One POST to one channel, within a call that may try several (src/http/channel-ladder.ts). */
export interface Hop {
  readonly target: { readonly origin: string; readonly path: string };
  readonly headers: Record<string, string>;
  readonly body: NonNullable<Dispatcher.RequestOptions['body']>;
  /** This hop's own limit, within what the call has left. */
  readonly timeoutMs: number;
  /** The whole call's signal (its budget, the client's disconnect, the shutdown). */
  readonly call: CallSignal;
  readonly dispatcher?: Dispatcher | undefined;
  /** The channel's credentials taken out of an error answer (`scrubberOf(channel)`). */
  readonly scrub: Scrub;
  /** Told the answer's status once its headers arrive (the attempt's trace span). */
  readonly onStatus?: ((status: number) => void) | undefined;
}

/**
 * Sends one non-streamed upstream request and reads its 2xx answer with `read` (which bounds it). An
 * error status keeps the first MiB of its body; a 2xx answer over its bound, or whose body broke off after
 * its status, is `unreadable` (the upstream said it did the work, the gateway cannot use what came back:
 * `brokenAnswer`), the hop's own limit a time-out like the call's (docs/media.md, "Sent upstream once").
 */
export async function postHop<T>(hop: Hop, read: (response: Dispatcher.ResponseData) => Promise<T>): Promise<HopResult<T>> {
  const signal = new CallSignal(hop.timeoutMs, hop.call);
  let response: Dispatcher.ResponseData;
  try {
    response = await (hop.dispatcher ?? upstreamAgent).request({
      origin: hop.target.origin,
      path: hop.target.path,
      method: 'POST',
      headers: hop.headers,
      body: hop.body,
      signal: signal.signal,
      headersTimeout: hop.timeoutMs,
      bodyTimeout: hop.timeoutMs,
    });
  } catch (error) {
    signal.clear();
    return { ok: false, failure: signal.expired ? { kind: 'timeout', message: 'the upstream did not answer in time' } : classify(error, hop.call) };
  }
  try {
    hop.onStatus?.(response.statusCode);
    if (response.statusCode >= 400) return { ok: false, failure: await statusFailure(response.statusCode, response.headers, response.body, hop.scrub) };
    return { ok: true, value: await read(response) };
  } catch (error) {
    return { ok: false, failure: brokenAnswer(error, hop.call, signal.expired) };
  } finally {
    signal.clear();
  }
}
