/** An account's limits as the wallet stores them; null is unlimited. */
export interface AccountLimits {
  readonly rpm: number | null;
  readonly concurrency: number | null;
}

/** Where an account stands after an admission decision, per dimension that is limited
 * (null: the dimension is unlimited, so there is nothing to report). */
export interface LimitState {
  readonly requests: { readonly limit: number; readonly remaining: number; readonly resetMs: number } | null;
  readonly concurrency: { readonly limit: number; readonly remaining: number } | null;
}

export type Dimension = 'requests' | 'concurrency';

export type Admission =
  | { readonly admitted: true; readonly state: LimitState; /** null when concurrency is unlimited */ readonly leaseId: string | null }
  | { readonly admitted: false; readonly state: LimitState; readonly exceeded: readonly Dimension[]; readonly retryAfterMs: number };

/**
 * Per-account request admission: a sliding window of request start times (`rpm`) and a
 * set of concurrency leases that expire unless renewed, so a crashed instance's slots
 * come back by themselves. One decision is atomic (check both, record both or nothing):
 * a refused request consumes nothing.
 */
export interface RateLimiter {
  /** How long a lease lives without a renewal. */
  readonly leaseTtlMs: number;
  admit(accountId: string, limits: AccountLimits): Promise<Admission>;
  /** Extends a lease by leaseTtlMs; false when it is gone (expired or released). */
  renew(accountId: string, leaseId: string): Promise<boolean>;
  /** Frees a concurrency slot; releasing twice (or an expired lease) is harmless. */
  release(accountId: string, leaseId: string): Promise<void>;
  /** A shared limiter's round trip to its store (Redis), for readiness: throws while it cannot
   * be reached. Absent on a limiter that needs nothing outside the process. */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

/** The shared limiter cannot be reached (Redis is down or not answering): refused at once, without
 * a round trip, until the connection is back. Its caller lets the request through (fails open). */
export class LimiterUnavailableError extends Error {
  readonly code = 'limiter_unavailable' as const;
  constructor(override readonly cause: Error) {
    super(`rate limiter unavailable: ${cause.message}`);
    this.name = 'LimiterUnavailableError';
  }
}

/** How a shared limiter reports its connection: once when it is lost, once when it is back. */
export interface LimiterHealth {
  unavailable(error: Error): void;
  available(): void;
}

export interface RateLimiterOptions {
  /** Redis for limits shared by every instance; unset: this process only. */
  readonly redisUrl?: string | undefined;
  /** Prefix of the Redis keys (tests give each file its own). */
  readonly keyPrefix?: string;
  /** Lease lifetime without a heartbeat; the plugin renews every third of it. */
  readonly leaseTtlMs?: number;
  /** The sliding window; the spec's minute unless a test shortens it. */
  readonly windowMs?: number;
}

export const WINDOW_MS = 60_000;
export const LEASE_TTL_MS = 60_000;
export const KEY_PREFIX = 'gw:rl:';

/** The counts one admission decision saw, the same from Lua and from memory. */
export interface RawDecision {
  readonly admitted: boolean;
  /** Requests in the window (including this one when admitted). */
  readonly used: number;
  /** Start time of the oldest request in the window, -1 when empty. */
  readonly oldestMs: number;
  /** Leases held (including this one when admitted). */
  readonly inFlight: number;
  readonly requestsFull: boolean;
  readonly concurrencyFull: boolean;
  readonly nowMs: number;
}

/** Turns counts into what the client is told. A full concurrency dimension has no known
 * end (some request must finish), so it asks for a retry after one second. */
export function admissionOf(raw: RawDecision, limits: AccountLimits, windowMs: number, leaseId: string | null): Admission {
  // Whole milliseconds: the in-process clock is fractional, and (t + 60000) − t can come out a hair over
  // 60000, which the headers' whole seconds (rounded up) would show as 61.
  const resetMs = raw.oldestMs < 0 ? 0 : Math.max(0, Math.round(raw.oldestMs + windowMs - raw.nowMs));
  const state: LimitState = {
    requests: limits.rpm === null ? null : { limit: limits.rpm, remaining: Math.max(0, limits.rpm - raw.used), resetMs },
    concurrency: limits.concurrency === null ? null : { limit: limits.concurrency, remaining: Math.max(0, limits.concurrency - raw.inFlight) },
  };
  if (raw.admitted) return { admitted: true, state, leaseId: limits.concurrency === null ? null : leaseId };
  const exceeded: Dimension[] = [];
  if (raw.requestsFull) exceeded.push('requests');
  if (raw.concurrencyFull) exceeded.push('concurrency');
  return { admitted: false, state, exceeded, retryAfterMs: Math.max(raw.requestsFull ? resetMs : 0, raw.concurrencyFull ? 1000 : 0) };
}
