/**
 * A small time-to-live cache of asynchronous answers. Only successes are kept (a failed fetch is asked
 * again next time); concurrent misses of one key share one fetch, so a burst of clients asking for the
 * same thing while it is cold costs the upstream one request.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { readonly value: V; readonly until: number }>();
  private readonly pending = new Map<string, Promise<V>>();

  /**
   * @param ttlMs how long an answer is kept
   * @param now the clock in milliseconds (injected: tests move it)
   * @param maxEntries past this many, the oldest entries go (insertion order); keeps a client that asks
   *   for many distinct keys from growing the map without bound
   */
  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 1000,
  ) {}

  /** The kept answer for `key`, else the one `fetch` gives (kept only when `keep` says so; default: always). */
  async get(key: string, fetch: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    const entry = this.entries.get(key);
    if (entry && entry.until > this.now()) return entry.value;
    if (entry) this.entries.delete(key);
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const fetched = (async () => {
      try {
        const value = await fetch();
        if (keep(value)) this.remember(key, value);
        return value;
      } finally {
        this.pending.delete(key);
      }
    })();
    this.pending.set(key, fetched);
    return fetched;
  }

  private remember(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, until: this.now() + this.ttlMs });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }
}
