import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessRateLimiter } from '../../src/limits/in-process';
import type { Admission, RateLimiter } from '../../src/limits/rate-limiter';
import { RedisRateLimiter } from '../../src/limits/redis';

const REDIS_URL = process.env.REDIS_URL;

interface Made {
  readonly limiter: RateLimiter;
  /** Lets time pass: a fake clock in memory, real time against Redis. */
  advance(ms: number): Promise<void>;
}

type Factory = (options: { leaseTtlMs?: number; windowMs?: number; keyPrefix?: string }) => Made;

const inProcess: Factory = (options) => {
  let now = 1_000_000;
  return {
    limiter: new InProcessRateLimiter(options, () => now),
    advance: async (ms) => {
      now += ms;
    },
  };
};

const redis: Factory = (options) => ({
  limiter: new RedisRateLimiter(REDIS_URL!, { keyPrefix: `gw:test:${randomBytes(6).toString('hex')}:`, ...options }),
  advance: (ms) => sleep(ms),
});

const account = () => `acct_${randomBytes(6).toString('hex')}`;
const leaseOf = (a: Admission) => (a.admitted ? a.leaseId! : expect.unreachable('refused'));

/** The behaviour both implementations must share. */
function contract(name: string, make: Factory, skip: boolean) {
  describe.skipIf(skip)(`${name} rate limiter`, () => {
    const opened: RateLimiter[] = [];
    const open: Factory = (options) => {
      const made = make(options);
      opened.push(made.limiter);
      return made;
    };
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((l) => l.close()));
    });

    it('admits rpm requests per window, counts remaining down, then refuses with the time to the next slot', async () => {
      const { limiter } = open({});
      const id = account();
      const limits = { rpm: 3, concurrency: null };
      const remaining = [];
      for (let i = 0; i < 3; i++) {
        const a = await limiter.admit(id, limits);
        expect(a.admitted).toBe(true);
        expect(a.state.concurrency).toBeNull();
        if (a.admitted) expect(a.leaseId).toBeNull();
        remaining.push(a.state.requests!.remaining);
      }
      expect(remaining).toEqual([2, 1, 0]);
      const refused = await limiter.admit(id, limits);
      expect(refused.admitted).toBe(false);
      if (refused.admitted) return;
      expect(refused.exceeded).toEqual(['requests']);
      expect(refused.retryAfterMs).toBeGreaterThan(0);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000);
      expect(refused.state.requests).toMatchObject({ limit: 3, remaining: 0 });
      // Other accounts are not affected.
      expect((await limiter.admit(account(), limits)).admitted).toBe(true);
    });

    it('slides: the oldest request leaving frees exactly one slot', async () => {
      const { limiter, advance } = open({ windowMs: 1000 });
      const id = account();
      const limits = { rpm: 3, concurrency: null };
      expect((await limiter.admit(id, limits)).admitted).toBe(true);
      await advance(500);
      expect((await limiter.admit(id, limits)).admitted).toBe(true);
      expect((await limiter.admit(id, limits)).admitted).toBe(true);
      const refused = await limiter.admit(id, limits);
      expect(refused.admitted).toBe(false);
      if (refused.admitted) return;
      // The first request leaves the window 1000 ms after it started: about 500 ms from now
      // (a little slack: a timer and the Redis clock may disagree by a millisecond or two).
      expect(refused.retryAfterMs).toBeLessThanOrEqual(520);
      expect(refused.state.requests!.resetMs).toBe(refused.retryAfterMs);
      await advance(refused.retryAfterMs + 50);
      const next = await limiter.admit(id, limits);
      expect(next.admitted).toBe(true);
      expect(next.state.requests!.remaining).toBe(0);
      // Only one came back: the two later requests are still in the window.
      expect((await limiter.admit(id, limits)).admitted).toBe(false);
    });

    it('a refusal consumes nothing, in either dimension', async () => {
      const { limiter } = open({});
      const id = account();
      const limits = { rpm: 2, concurrency: 1 };
      const first = await limiter.admit(id, limits);
      const refused = await limiter.admit(id, limits);
      expect(refused.admitted).toBe(false);
      if (!refused.admitted) {
        expect(refused.exceeded).toEqual(['concurrency']);
        expect(refused.retryAfterMs).toBe(1000);
        expect(refused.state.requests!.remaining).toBe(1);
      }
      await limiter.release(id, leaseOf(first));
      // The refused request took no place in the window: a second request still fits.
      const second = await limiter.admit(id, limits);
      expect(second.admitted).toBe(true);
      expect(second.state.requests!.remaining).toBe(0);
      expect(second.state.concurrency).toEqual({ limit: 1, remaining: 0 });
      await limiter.release(id, leaseOf(second));
      const third = await limiter.admit(id, limits);
      expect(third.admitted).toBe(false);
      if (!third.admitted) expect(third.exceeded).toEqual(['requests']);
      // ...and the refused one holds no lease either.
      expect((await limiter.admit(id, { rpm: null, concurrency: 1 })).admitted).toBe(true);
    });

    it('releases concurrency slots, and releasing twice frees only one', async () => {
      const { limiter } = open({});
      const id = account();
      const limits = { rpm: null, concurrency: 2 };
      const a = await limiter.admit(id, limits);
      const b = await limiter.admit(id, limits);
      expect(b.state.concurrency).toEqual({ limit: 2, remaining: 0 });
      const c = await limiter.admit(id, limits);
      expect(c.admitted).toBe(false);
      if (!c.admitted) expect(c.exceeded).toEqual(['concurrency']);
      await limiter.release(id, leaseOf(a));
      await limiter.release(id, leaseOf(a));
      await limiter.release(id, 'never-issued');
      expect((await limiter.admit(id, limits)).admitted).toBe(true);
      // b still holds its slot.
      expect((await limiter.admit(id, limits)).admitted).toBe(false);
      await limiter.release(id, leaseOf(b));
      expect((await limiter.admit(id, limits)).admitted).toBe(true);
    });

    it('frees the slot of a lease nobody renews (a crashed instance), and keeps a renewed one', async () => {
      const { limiter, advance } = open({ leaseTtlMs: 600 });
      const id = account();
      const limits = { rpm: null, concurrency: 1 };
      const renewed = await limiter.admit(id, limits);
      // Renewed every 150 ms for longer than its TTL: still held.
      for (let i = 0; i < 5; i++) {
        await advance(150);
        expect(await limiter.renew(id, leaseOf(renewed))).toBe(true);
      }
      expect((await limiter.admit(id, limits)).admitted).toBe(false);
      await limiter.release(id, leaseOf(renewed));
      expect(await limiter.renew(id, leaseOf(renewed))).toBe(false);

      // Acquired and never released nor renewed: gone after the TTL.
      expect((await limiter.admit(id, limits)).admitted).toBe(true);
      expect((await limiter.admit(id, limits)).admitted).toBe(false);
      await advance(700);
      expect((await limiter.admit(id, limits)).admitted).toBe(true);
    });
  });
}

contract('in-process', inProcess, false);
contract('redis', redis, !REDIS_URL);

describe.skipIf(!REDIS_URL)('redis rate limiter shared by instances', () => {
  it('two limiters on one Redis share the window and the slots, atomically', async () => {
    const keyPrefix = `gw:test:${randomBytes(6).toString('hex')}:`;
    const one = new RedisRateLimiter(REDIS_URL!, { keyPrefix });
    const two = new RedisRateLimiter(REDIS_URL!, { keyPrefix });
    try {
      const id = account();
      const racing = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).admit(id, { rpm: 5, concurrency: null })));
      expect(racing.filter((a) => a.admitted)).toHaveLength(5);

      const other = account();
      const held = await one.admit(other, { rpm: null, concurrency: 3 });
      const parallel = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? one : two).admit(other, { rpm: null, concurrency: 3 })));
      expect(parallel.filter((a) => a.admitted)).toHaveLength(2);
      await two.release(other, leaseOf(held));
      expect((await one.admit(other, { rpm: null, concurrency: 3 })).admitted).toBe(true);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});
