/**
 * How many refused calls of one account this process records per minute. Each refusal of a
 * known key writes a call-log row (a CallRejected event in the account's wallet stream), and
 * a refusal is cheap to provoke: a client hammering its 429 or 402 would otherwise append an
 * event per request, without end, to the stream every load of the wallet reads. Past the budget
 * refusals are counted, not recorded, and the count is reported once a minute.
 *
 * A token bucket per account: `perMinute` tokens, refilled evenly over the minute.
 */
export interface RefusalBudgetOptions {
  readonly perMinute?: number;
  /** Accounts tracked at most; past it the ones with a full bucket are forgotten. */
  readonly maxAccounts?: number;
}

export const REFUSALS_RECORDED_PER_MINUTE = 600;

interface Bucket {
  tokens: number;
  at: number;
  /** Refusals not recorded since the last report. */
  dropped: number;
  reportedAt: number;
}

export type BudgetAnswer =
  | { readonly record: true }
  /** `report`: the refusals left unrecorded since the last report (at most one a minute), else 0. */
  | { readonly record: false; readonly report: number };

export class RefusalBudget {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMinute: number;
  private readonly maxAccounts: number;

  constructor(options: RefusalBudgetOptions = {}) {
    this.perMinute = options.perMinute ?? REFUSALS_RECORDED_PER_MINUTE;
    this.maxAccounts = options.maxAccounts ?? 10_000;
  }

  /** Whether a refusal of the account would be recorded now; nothing is taken. Work done only for a
   * refusal's row (reading the model its body names) is skipped when the row would not be written. */
  wouldRecord(accountId: string, nowMs: number): boolean {
    const bucket = this.buckets.get(accountId);
    return !bucket || bucket.tokens + ((nowMs - bucket.at) * this.perMinute) / 60_000 >= 1;
  }

  /** `nowMs`: a monotonic clock in milliseconds. */
  take(accountId: string, nowMs: number): BudgetAnswer {
    let bucket = this.buckets.get(accountId);
    if (!bucket) {
      if (this.buckets.size >= this.maxAccounts) this.forgetIdle(nowMs);
      bucket = { tokens: this.perMinute, at: nowMs, dropped: 0, reportedAt: -Infinity };
      this.buckets.set(accountId, bucket);
    }
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + ((nowMs - bucket.at) * this.perMinute) / 60_000);
    bucket.at = nowMs;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { record: true };
    }
    bucket.dropped += 1;
    if (nowMs - bucket.reportedAt < 60_000) return { record: false, report: 0 };
    const report = bucket.dropped;
    bucket.dropped = 0;
    bucket.reportedAt = nowMs;
    return { record: false, report };
  }

  private forgetIdle(nowMs: number) {
    for (const [accountId, bucket] of this.buckets) {
      const tokens = bucket.tokens + ((nowMs - bucket.at) * this.perMinute) / 60_000;
      if (tokens >= this.perMinute) this.buckets.delete(accountId);
    }
    // Every tracked account is busy refusing: forgetting one gives it a fresh budget, no more.
    if (this.buckets.size >= this.maxAccounts) this.buckets.delete(this.buckets.keys().next().value!);
  }
}
