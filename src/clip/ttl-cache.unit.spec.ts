import { describe, expect, it } from 'vitest';
import { TtlCache } from './ttl-cache';

describe('TtlCache', () => {
  it('keeps an answer for its time to live, then fetches again', async () => {
    let now = 1_000;
    let fetches = 0;
    const cache = new TtlCache<number>(600_000, () => now);
    const fetch = async () => ++fetches;
    expect(await cache.get('a', fetch)).toBe(1);
    now += 599_999;
    expect(await cache.get('a', fetch)).toBe(1);
    now += 1;
    expect(await cache.get('a', fetch)).toBe(2);
    expect(await cache.get('b', fetch)).toBe(3);
  });

  it('shares one fetch among concurrent misses of a key', async () => {
    let fetches = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const cache = new TtlCache<number>(1000, () => 0);
    const fetch = async () => {
      fetches++;
      await gate;
      return 7;
    };
    const all = Promise.all([cache.get('k', fetch), cache.get('k', fetch), cache.get('k', fetch)]);
    release();
    expect(await all).toEqual([7, 7, 7]);
    expect(fetches).toBe(1);
  });

  it('does not keep failures or answers `keep` refuses; the next call fetches again', async () => {
    const cache = new TtlCache<string>(1000, () => 0);
    await expect(cache.get('k', async () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await cache.get('k', async () => 'unavailable', (v) => v !== 'unavailable')).toBe('unavailable');
    expect(await cache.get('k', async () => 'ok')).toBe('ok');
    expect(await cache.get('k', async () => 'later')).toBe('ok');
  });

  it('drops the oldest entries past its bound', async () => {
    const cache = new TtlCache<string>(1000, () => 0, 2);
    await cache.get('a', async () => 'a1');
    await cache.get('b', async () => 'b1');
    await cache.get('c', async () => 'c1');
    expect(await cache.get('a', async () => 'a2')).toBe('a2');
    expect(await cache.get('c', async () => 'c2')).toBe('c1');
  });
});
