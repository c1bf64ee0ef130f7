import type { CallRecord } from '../events/catalog';
import { isCredentialRefusal } from '../channels/credential-refusal';
import type { Failure } from '../upstream/upstream-call';
import type { AccessCall } from './access-log';
import type { AttemptResult, GatewayMetrics } from './metrics';

/** Why an attempt failed, as a label. */
export function attemptResult(failure: Failure | null): AttemptResult {
  if (failure === null) return 'ok';
  if (failure.kind === 'no_channel') return 'unreachable';
  if (failure.kind !== 'status') return failure.kind;
  if (failure.status === 429) return 'rate_limited';
  // The channel's own key, not the caller's request: failed over and probed, never the client's 4xx.
  if (isCredentialRefusal(failure)) return 'credentials';
  return failure.status < 500 ? 'client_error' : 'server_error';
}

/**
 * The timings of one billable call, told by the code that carries it out (relay, images) and
 * recorded once, with its call record (`finish`). Plain fields, no allocation per event: the relay
 * calls `firstByte` for every event it writes.
 */
export class CallMeter {
  private attemptAt = 0;
  /** Upstream time of the attempts that failed, ms. */
  private failedMs = 0;
  /** The attempt whose answer was relayed: when it was sent, when its answer came (headers of a
   * stream, the whole body otherwise) and when its stream ended. */
  private answeredFrom = 0;
  private answeredAt = 0;
  private streamEndedAt = 0;
  private firstByteAt = 0;
  private attempts = 0;
  private failed: { readonly channel: string; readonly cause: AttemptResult } | null = null;
  private charged = 0n;
  private uncharged = 0n;
  private record: CallRecord | null = null;
  /** The access line of a response that ended before its record was built (a stream settles
   * after its last byte): written by `finish`. */
  private pendingLine: ((call: AccessCall | null) => void) | null = null;
  /** The request has been counted among its route's responses (src/metrics/http.ts). */
  responseCounted = false;

  constructor(
    private readonly metrics: GatewayMetrics,
    /** performance.now() when the request arrived. */
    readonly startedAt: number,
  ) {}

  /** An upstream request is about to leave; after a failed one, that is a failover. */
  attempt(): void {
    if (this.failed) {
      this.metrics.failover(this.failed.channel, this.failed.cause);
      this.failed = null;
    }
    this.attemptAt = performance.now();
  }

  /** The attempt on `channel` answered (a stream: its headers) or failed. */
  answered(channel: string, failure: Failure | null): void {
    const now = performance.now();
    const result = attemptResult(failure);
    this.attempts += 1;
    this.metrics.upstreamAttempt(channel, result);
    if (failure) {
      this.failedMs += now - this.attemptAt;
      this.failed = { channel, cause: result };
    } else {
      this.answeredFrom = this.attemptAt;
      this.answeredAt = now;
    }
  }

  /** The upstream stream ended (or broke) and what it sent was relayed. */
  streamEnded(): void {
    this.streamEndedAt = performance.now();
  }

  /** A byte of the answer is being written to the client; only the first counts. */
  firstByte(): void {
    if (this.firstByteAt === 0) this.firstByteAt = performance.now();
  }

  /** The amount the call is billed (nano-USD), and what its price came to beyond its capture bound (not billed). */
  charge(amount: bigint, uncharged = 0n): void {
    this.charged = amount;
    this.uncharged = uncharged;
  }

  /** The call's outcome: recorded once (a second record of the same request changes nothing). */
  finish(record: CallRecord): void {
    if (this.record) return;
    this.record = record;
    const now = performance.now();
    const answered = record.status === 'success' || record.status === 'interrupted';
    const relayedMs = this.answeredAt === 0 ? 0 : (this.streamEndedAt || this.answeredAt) - this.answeredFrom;
    this.metrics.call(record, {
      total: (now - this.startedAt) / 1000,
      // A whole answer is written as the call is recorded.
      firstByte: answered ? ((this.firstByteAt || now) - this.startedAt) / 1000 : null,
      upstream: this.attempts > 0 ? (this.failedMs + relayedMs) / 1000 : null,
      cost: this.charged,
      uncharged: this.uncharged,
    });
    const line = this.pendingLine;
    if (line) {
      this.pendingLine = null;
      line({ record, cost: this.charged });
    }
  }

  /**
   * The response ended: `line` is written now, with the call's record when it has one, or once
   * the record is built when `awaitRecord` (an answer whose settlement follows its last byte).
   */
  responded(line: (call: AccessCall | null) => void, awaitRecord: boolean): void {
    if (this.record) line({ record: this.record, cost: this.charged });
    else if (awaitRecord) this.pendingLine = line;
    else line(null);
  }
}
