import { InProcessRateLimiter } from './in-process';
import type { LimiterHealth, RateLimiter, RateLimiterOptions } from './rate-limiter';

export type { AccountLimits, Admission, Dimension, LimiterHealth, LimitState, RateLimiter, RateLimiterOptions } from './rate-limiter';
export { LimiterUnavailableError } from './rate-limiter';
export { ConcurrencySlot } from './slot';
export { InProcessRateLimiter } from './in-process';

/** Redis when a URL is given (limits shared by every instance), else this process only.
 * ioredis is loaded only in the first case. */
export async function createRateLimiter(options: RateLimiterOptions, health?: LimiterHealth): Promise<RateLimiter> {
  const { redisUrl, ...rest } = options;
  if (redisUrl) {
    const { RedisRateLimiter } = await import('./redis');
    return new RedisRateLimiter(redisUrl, rest, health);
  }
  return new InProcessRateLimiter(rest);
}
