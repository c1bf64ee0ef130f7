import { EventEmitter } from 'node:events';
import { BodyTooLargeError, ERROR_BODY_BYTES, textWithin } from './bounded-body';
import { scrubKeyShaped, type Scrub } from './scrub';
import { Agent } from 'undici';

/** Keep-alive connections to upstreams, shared by every request. */
export const upstreamAgent = new Agent({ keepAliveTimeout: 30_000, connections: 512 });

const targets = new Map<string, { origin: string; prefix: string }>();

/**
 * A channel's base URL as undici's `origin` and a path prefix, parsed once per base URL: a
 * dispatcher's `request({ origin, path })` takes them as they are, where the top-level
 * `request(url)` parses a whole URL on every call.
 */
export function upstreamTarget(baseUrl: string, path: string): { origin: string; path: string } {
  let target = targets.get(baseUrl);
  if (!target) {
    const url = new URL(baseUrl);
    target = { origin: url.origin, prefix: url.pathname.replace(/\/+$/, '') };
    targets.set(baseUrl, target);
  }
  return { origin: target.origin, path: `${target.prefix}${path}` };
}

/** Why an upstream attempt gave no usable answer; decides failover and the client's error. */
export type Failure =
  | { kind: 'status'; status: number; body: string; headers: Record<string, string> }
  | { kind: 'unreachable'; message: string }
  /** The upstream answered 2xx but the gateway cannot read the answer (not the JSON expected, an id missing,
   * over its size bound): unlike a failed connection, the upstream may have accepted, and charged, the work
   * (src/channels/failover.ts, `mayHaveBeenAccepted`). */
  | { kind: 'unreadable'; message: string }
  | { kind: 'timeout'; message: string }
  /** The gateway ended the call: it is shutting down and the call outlasted SHUTDOWN_GRACE_S. */
  | { kind: 'shutdown'; message: string }
  /** No channel is left to try: those tried refused the gateway's own credentials for them (src/channels). */
  | { kind: 'no_channel'; message: string };

const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'ERR_TLS_CERT_ALTNAME_INVALID']);

/**
 * The whole-request budget, the client's disconnect and the gateway's shutdown, as one
 * signal for undici. One timer per call, cleared when the call ends. undici takes an
 * EventEmitter with `aborted` and `reason` as a request's signal: far cheaper per call than
 * an AbortController (an EventTarget). A signal with a parent (an image call's single hop within its ladder)
 * also aborts when the parent does.
 */
export class CallSignal extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;
  expired = false;
  /** Ended by the gateway's shutdown (src/lifecycle), not by the call's budget or its client. */
  shuttingDown = false;
  private readonly timer: NodeJS.Timeout;
  private readonly detach: (() => void) | null = null;

  constructor(timeoutMs: number, parent?: CallSignal) {
    super();
    this.timer = setTimeout(() => {
      this.expired = true;
      this.abort(new DOMException('the request budget ran out', 'TimeoutError'));
    }, timeoutMs);
    if (parent?.aborted) this.abort(parent.reason);
    else if (parent) {
      const follow = () => this.abort(parent.reason);
      parent.once('abort', follow);
      this.detach = () => parent.removeListener('abort', follow);
    }
  }

  /** What undici is given as the request's `signal`. */
  get signal(): this {
    return this;
  }

  /** The client went away (or the call may not go on). */
  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')) {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }

  /** The gateway is shutting down and the call outlasted its grace: it ends now, in its protocol's way. */
  endForShutdown() {
    if (this.aborted) return;
    this.shuttingDown = true;
    this.abort(new DOMException('the gateway is shutting down', 'AbortError'));
  }

  clear() {
    clearTimeout(this.timer);
    this.detach?.();
  }
}

export const SHUTDOWN_MESSAGE = 'the gateway is shutting down; retry the request';

/** A thrown request error as a failure: time-outs (ours or undici's) apart from connection failures. */
export function classify(error: unknown, deadline: CallSignal): Failure {
  if (deadline.shuttingDown) return { kind: 'shutdown', message: SHUTDOWN_MESSAGE };
  const e = error as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  if (deadline.expired || e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT')
    return { kind: 'timeout', message: 'the upstream did not answer in time' };
  const code = e.code ?? e.cause?.code ?? '';
  // An error's own text may name what it connected through (a proxy URL with its user-info).
  return { kind: 'unreachable', message: CONNECTION_ERRORS.has(code) ? `upstream connection failed (${code})` : `upstream connection failed: ${scrubKeyShaped(e.message ?? code)}` };
}

/** A 2xx answer the gateway cannot use (`why`), as the client (502) and the call log are told: the paid
 * generations' ladders stop at it (src/channels/failover.ts, `mayHaveBeenAccepted`). */
export function unreadable(why: string): Failure {
  return { kind: 'unreadable', message: `the upstream answered 2xx but its answer could not be read (${why}); it may have accepted the work, so the request was not sent to another channel` };
}

/**
 * What an error thrown while a 2xx answer's body was read says: over its bound, or broken off after the
 * status (a reset, a closed connection), the answer is `unreadable`: the upstream said it accepted the work,
 * so a paid generation is not sent to another channel (`mayHaveBeenAccepted`), it ends with 502, its hold
 * released. The call's budget or the hop's own limit running out stays a time-out, the shutdown a shutdown.
 * `hopExpired`: the hop's own time limit (within the call's) ran out. Chat reads its answers itself
 * (src/http/protocols/relay.ts) and resends either way.
 */
export function brokenAnswer(error: unknown, call: CallSignal, hopExpired = false): Failure {
  if (error instanceof BodyTooLargeError) return unreadable(error.message);
  if (hopExpired) return { kind: 'timeout', message: 'the upstream did not answer in time' };
  const failure = classify(error, call);
  return failure.kind === 'unreachable' ? unreadable('its body broke off after the 2xx status') : failure;
}

/** The failure of an upstream answer with an error status: its body's first MiB (the message is
 * all that is used), Retry-After kept. The body is the upstream's text entering the gateway: `scrub`
 * (the channel's, `scrubberOf` in ./scrub.ts) takes the channel's credentials out of it here, before the
 * client, the call log, the channel's health or a log line sees it. */
export async function statusFailure(
  statusCode: number,
  headers: Record<string, string | string[] | undefined>,
  body: AsyncIterable<unknown> & { destroy(error?: Error): unknown },
  scrub: Scrub = scrubKeyShaped,
): Promise<Failure> {
  const text = scrub(await textWithin(body, ERROR_BODY_BYTES, { truncate: true }).catch(() => ''));
  const kept: Record<string, string> = {};
  const retryAfter = headers['retry-after'];
  if (typeof retryAfter === 'string') kept['retry-after'] = retryAfter;
  return { kind: 'status', status: statusCode, body: text, headers: kept };
}
