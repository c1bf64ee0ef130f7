import { Agent } from 'undici';

/** Keep-alive connections to upstreams, shared by every request. */
export const upstreamAgent = new Agent({ keepAliveTimeout: 30_000, connections: 512 });

/** Why an upstream attempt gave no usable answer; decides failover and the client's error. */
export type Failure =
  | { kind: 'status'; status: number; body: string; headers: Record<string, string> }
  | { kind: 'unreachable'; message: string }
  | { kind: 'timeout'; message: string };

const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'ERR_TLS_CERT_ALTNAME_INVALID']);

/**
 * The whole-request budget and the client's disconnect, as one signal for undici. One
 * timer per call, cleared when the call ends: AbortSignal.timeout/any would leave a
 * timer and a composite signal per call for the garbage collector.
 */
export class CallSignal {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  expired = false;

  constructor(timeoutMs: number) {
    this.timer = setTimeout(() => {
      this.expired = true;
      this.controller.abort(new DOMException('the request budget ran out', 'TimeoutError'));
    }, timeoutMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The client went away. */
  abort() {
    this.controller.abort();
  }

  clear() {
    clearTimeout(this.timer);
  }
}

/** A thrown request error as a failure: time-outs (ours or undici's) apart from connection failures. */
export function classify(error: unknown, deadline: CallSignal): Failure {
  const e = error as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  if (deadline.expired || e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT')
    return { kind: 'timeout', message: 'the upstream did not answer in time' };
  const code = e.code ?? e.cause?.code ?? '';
  return { kind: 'unreachable', message: CONNECTION_ERRORS.has(code) ? `upstream connection failed (${code})` : `upstream connection failed: ${e.message ?? code}` };
}

/** The failure of an upstream answer with an error status: its body read whole, Retry-After kept. */
export async function statusFailure(statusCode: number, headers: Record<string, string | string[] | undefined>, body: { text(): Promise<string> }): Promise<Failure> {
  const text = await body.text().catch(() => '');
  const kept: Record<string, string> = {};
  const retryAfter = headers['retry-after'];
  if (typeof retryAfter === 'string') kept['retry-after'] = retryAfter;
  return { kind: 'status', status: statusCode, body: text, headers: kept };
}
