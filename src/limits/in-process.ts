import { randomUUID } from 'node:crypto';
import { admissionOf, LEASE_TTL_MS, WINDOW_MS, type AccountLimits, type Admission, type RateLimiter } from './rate-limiter';

interface AccountUsage {
  /** Start times of the requests in the window, oldest first. */
  readonly starts: number[];
  /** Lease id -> expiry. */
  readonly leases: Map<string, number>;
}

/**
 * The rate limiter of a single gateway process (no REDIS_URL): the same rules as the
 * Redis one, kept in memory. JavaScript runs one decision at a time, so each call is
 * as atomic as the Lua script.
 */
export class InProcessRateLimiter implements RateLimiter {
  readonly leaseTtlMs: number;
  private readonly windowMs: number;
  private readonly accounts = new Map<string, AccountUsage>();

  constructor(
    options: { leaseTtlMs?: number; windowMs?: number } = {},
    // Monotonic by default: a wall-clock step must not empty or freeze a window.
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.leaseTtlMs = options.leaseTtlMs ?? LEASE_TTL_MS;
    this.windowMs = options.windowMs ?? WINDOW_MS;
  }

  async admit(accountId: string, limits: AccountLimits): Promise<Admission> {
    const now = this.clock();
    const usage = this.pruned(accountId, now);
    const requestsFull = limits.rpm !== null && usage.starts.length >= limits.rpm;
    const concurrencyFull = limits.concurrency !== null && usage.leases.size >= limits.concurrency;
    const admitted = !requestsFull && !concurrencyFull;
    const leaseId = randomUUID();
    if (admitted) {
      // An unlimited dimension is not tracked: a limit set later starts from an empty window.
      if (limits.rpm !== null) usage.starts.push(now);
      if (limits.concurrency !== null) usage.leases.set(leaseId, now + this.leaseTtlMs);
    }
    const raw = {
      admitted,
      used: usage.starts.length,
      oldestMs: usage.starts[0] ?? -1,
      inFlight: usage.leases.size,
      requestsFull,
      concurrencyFull,
      nowMs: now,
    };
    this.forgetIfIdle(accountId, usage);
    return admissionOf(raw, limits, this.windowMs, leaseId);
  }

  async renew(accountId: string, leaseId: string): Promise<boolean> {
    const now = this.clock();
    const usage = this.pruned(accountId, now);
    const held = usage.leases.has(leaseId);
    if (held) usage.leases.set(leaseId, now + this.leaseTtlMs);
    this.forgetIfIdle(accountId, usage);
    return held;
  }

  async release(accountId: string, leaseId: string): Promise<void> {
    const usage = this.accounts.get(accountId);
    if (!usage) return;
    usage.leases.delete(leaseId);
    this.forgetIfIdle(accountId, usage);
  }

  async close(): Promise<void> {
    this.accounts.clear();
  }

  /** The account's usage with requests that left the window and expired leases removed. */
  private pruned(accountId: string, now: number): AccountUsage {
    let usage = this.accounts.get(accountId);
    if (!usage) {
      usage = { starts: [], leases: new Map() };
      this.accounts.set(accountId, usage);
    }
    // A request started at t counts while now - t < window (the Redis script removes scores <= now - window).
    let gone = 0;
    while (gone < usage.starts.length && usage.starts[gone]! <= now - this.windowMs) gone++;
    if (gone > 0) usage.starts.splice(0, gone);
    for (const [id, expiry] of usage.leases) if (expiry <= now) usage.leases.delete(id);
    return usage;
  }

  private forgetIfIdle(accountId: string, usage: AccountUsage) {
    if (usage.starts.length === 0 && usage.leases.size === 0) this.accounts.delete(accountId);
  }
}
