import { afterEach, describe, expect, it, vi } from 'vitest';
import { sampled } from './sampled';

afterEach(() => vi.restoreAllMocks());

describe('sampled', () => {
  it('joins a read in flight, reuses its result for maxAgeMs, then reads again; a failure is not reused', async () => {
    let reads = 0;
    let fail = false;
    const read = sampled(async () => {
      reads += 1;
      if (fail) throw new Error('down');
      return reads;
    }, 1000);
    const now = vi.spyOn(performance, 'now').mockReturnValue(0);
    // The gauges of one scrape ask together: one read.
    expect(await Promise.all([read(), read(), read()])).toEqual([1, 1, 1]);
    now.mockReturnValue(999);
    expect(await read()).toBe(1);
    now.mockReturnValue(1_001);
    fail = true;
    await expect(read()).rejects.toThrow('down');
    fail = false;
    expect(await read()).toBe(3);
    expect(reads).toBe(3);
  });
});
