import { describe, expect, it } from 'vitest';
import { RecentMap } from './recent-map';

describe('RecentMap', () => {
  it('keeps at most `limit` entries, forgetting the least recently used', () => {
    const map = new RecentMap<string, number>(3);
    for (let i = 0; i < 1000; i++) map.set(`k${i}`, i);
    expect(map.size).toBe(3);
    expect(map.get('k999')).toBe(999);
    expect(map.get('k996')).toBeUndefined();
  });

  it('counts a read as a use', () => {
    const map = new RecentMap<string, number>(2);
    map.set('a', 1).set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect(map.get('a')).toBe(1);
    expect(map.get('b')).toBeUndefined();
    map.set('a', 10);
    expect(map.size).toBe(2);
    expect(map.get('a')).toBe(10);
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new RecentMap(0)).toThrow(RangeError);
  });
});
