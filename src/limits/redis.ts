import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  admissionOf,
  KEY_PREFIX,
  LEASE_TTL_MS,
  LimiterUnavailableError,
  WINDOW_MS,
  type AccountLimits,
  type Admission,
  type LimiterHealth,
  type RateLimiter,
} from './rate-limiter';

// Every script reads the clock with TIME, inside Redis: instances whose clocks disagree
// still share one notion of "now". (Redis 5+ replicates a script's effects, not the script,
// so a non-deterministic command before a write is allowed.)
const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// Only ever lengthen a key's expiry: instances configured with different TTLs share keys.
const KEEP_ALIVE = `
local function keep(key, ms)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end
`;

/**
 * KEYS: window ZSET (member: request id, score: start ms), leases ZSET (member: lease id,
 * score: expiry ms). ARGV: rpm, concurrency (0 = unlimited), window ms, lease TTL ms, id.
 * Both checks first, then both records or none: a refusal consumes nothing.
 * Returns {admitted, used, oldest, inFlight, requestsFull, concurrencyFull, now}.
 */
const ADMIT = `${NOW}${KEEP_ALIVE}
local rpm = tonumber(ARGV[1])
local concurrency = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local id = ARGV[5]
local used, oldest, inflight = 0, -1, 0
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  used = redis.call('ZCARD', KEYS[1])
  if used > 0 then oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]) end
end
if concurrency > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  inflight = redis.call('ZCARD', KEYS[2])
end
local requestsFull = (rpm > 0 and used >= rpm) and 1 or 0
local concurrencyFull = (concurrency > 0 and inflight >= concurrency) and 1 or 0
if requestsFull == 1 or concurrencyFull == 1 then
  return {0, used, oldest, inflight, requestsFull, concurrencyFull, now}
end
if rpm > 0 then
  redis.call('ZADD', KEYS[1], now, id)
  used = used + 1
  if oldest < 0 then oldest = now end
  keep(KEYS[1], window)
end
if concurrency > 0 then
  redis.call('ZADD', KEYS[2], now + ttl, id)
  inflight = inflight + 1
  keep(KEYS[2], ttl)
end
return {1, used, oldest, inflight, 0, 0, now}
`;

/** KEYS: leases ZSET. ARGV: lease id, TTL ms. 1 when renewed, 0 when already gone. */
const RENEW = `${NOW}${KEEP_ALIVE}
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
keep(KEYS[1], tonumber(ARGV[2]))
return 1
`;

type Reply = [number, number, number, number, number, number, number];

interface Scripts {
  gwRateAdmit(window: string, leases: string, rpm: number, concurrency: number, windowMs: number, ttlMs: number, id: string): Promise<Reply>;
  gwRateRenew(leases: string, id: string, ttlMs: number): Promise<number>;
}

/**
 * Limits shared by every gateway instance on one Redis: per account a ZSET of request
 * start times (the sliding window) and a ZSET of leases scored by expiry, both decided
 * by Lua scripts (EVALSHA through ioredis' defineCommand) so that concurrent instances
 * never both take the last slot.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly leaseTtlMs: number;
  private readonly windowMs: number;
  private readonly prefix: string;
  private readonly redis: Redis & Scripts;
  /** Why Redis is unreachable, while it is: every call is refused at once until it is back. */
  private outage: Error | null = null;
  private closing = false;

  constructor(
    url: string,
    options: { keyPrefix?: string; leaseTtlMs?: number; windowMs?: number } = {},
    private readonly health: LimiterHealth = { unavailable: () => {}, available: () => {} },
  ) {
    this.leaseTtlMs = options.leaseTtlMs ?? LEASE_TTL_MS;
    this.windowMs = options.windowMs ?? WINDOW_MS;
    this.prefix = options.keyPrefix ?? KEY_PREFIX;
    // Until the connection is first lost, a command waits for it (the first requests after a
    // start); from then on until it is back, none waits: see `call`.
    const redis = new Redis(url, { commandTimeout: 2000, maxRetriesPerRequest: 1, enableOfflineQueue: true });
    redis.on('error', (error: Error) => this.lost(error));
    redis.on('close', () => {
      if (!this.closing) this.lost(new Error('connection to Redis closed'));
    });
    redis.on('ready', () => {
      if (this.outage === null) return;
      this.outage = null;
      this.health.available();
    });
    redis.defineCommand('gwRateAdmit', { numberOfKeys: 2, lua: ADMIT });
    redis.defineCommand('gwRateRenew', { numberOfKeys: 1, lua: RENEW });
    this.redis = redis as Redis & Scripts;
  }

  /** The first failure of an outage is reported; the client reconnects by itself (with back-off). */
  private lost(error: Error) {
    if (this.outage !== null || this.closing) return;
    this.outage = error;
    this.health.unavailable(error);
  }

  /**
   * A command, or at once a LimiterUnavailableError while Redis is unreachable: requests must not
   * each wait out the command timeout behind a dead connection. A command that times out on a
   * connection that looks open (Redis stopped answering, the network dropped its packets) starts
   * an outage too, and the connection is dropped so that the client dials again.
   */
  private async call<T>(run: () => Promise<T>): Promise<T> {
    if (this.outage !== null) throw new LimiterUnavailableError(this.outage);
    try {
      return await run();
    } catch (error) {
      if (error instanceof Error && error.message === 'Command timed out' && !this.closing) {
        this.lost(error);
        this.redis.disconnect(true);
      }
      throw this.outage !== null ? new LimiterUnavailableError(this.outage) : error;
    }
  }

  // The hash tag keeps an account's two keys in one slot, should this ever run on a cluster.
  private windowKey(accountId: string) {
    return `${this.prefix}{${accountId}}:requests`;
  }

  private leasesKey(accountId: string) {
    return `${this.prefix}{${accountId}}:leases`;
  }

  async admit(accountId: string, limits: AccountLimits): Promise<Admission> {
    const id = randomUUID();
    const [admitted, used, oldest, inFlight, requestsFull, concurrencyFull, now] = await this.call(() =>
      this.redis.gwRateAdmit(this.windowKey(accountId), this.leasesKey(accountId), limits.rpm ?? 0, limits.concurrency ?? 0, this.windowMs, this.leaseTtlMs, id),
    );
    const raw = {
      admitted: admitted === 1,
      used,
      oldestMs: oldest,
      inFlight,
      requestsFull: requestsFull === 1,
      concurrencyFull: concurrencyFull === 1,
      nowMs: now,
    };
    return admissionOf(raw, limits, this.windowMs, id);
  }

  async renew(accountId: string, leaseId: string): Promise<boolean> {
    return (await this.call(() => this.redis.gwRateRenew(this.leasesKey(accountId), leaseId, this.leaseTtlMs))) === 1;
  }

  async release(accountId: string, leaseId: string): Promise<void> {
    await this.call(() => this.redis.zrem(this.leasesKey(accountId), leaseId));
  }

  async ping(): Promise<void> {
    await this.call(() => this.redis.ping());
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
