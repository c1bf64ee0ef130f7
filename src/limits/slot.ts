import type { RateLimiter } from './rate-limiter';

/**
 * A concurrency lease held by one request in flight: renewed every third of the lease
 * TTL so that a long stream keeps its slot, and released exactly once however the request
 * ends (completion, client disconnect, error). If this process dies, the renewals stop
 * and the lease expires by itself.
 */
export class ConcurrencySlot {
  private heartbeat: NodeJS.Timeout | null;
  private released = false;

  constructor(
    private readonly limiter: RateLimiter,
    private readonly accountId: string,
    private readonly leaseId: string,
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    this.heartbeat = setInterval(() => {
      limiter.renew(accountId, leaseId).catch(onError);
    }, Math.max(1, Math.floor(limiter.leaseTtlMs / 3)));
    // An open request keeps the process alive, not its heartbeat.
    this.heartbeat.unref();
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    this.limiter.release(this.accountId, this.leaseId).catch(this.onError);
  }
}
