/**
 * A map that keeps its `limit` most recently used entries: setting one past the limit forgets
 * the least recently used. For caches on the request path whose keys come from outside (API
 * keys presented, keys used): a flood of distinct keys evicts old entries one at a time instead
 * of growing the map for ever or emptying it at once (which sent every request back to the
 * database together).
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, not ${limit}`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value, now the most recently used. */
  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    // A Map iterates in insertion order: moved to the end, it is evicted last.
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: K, value: V): this {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value as K);
    return this;
  }
}
