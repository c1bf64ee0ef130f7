/** Sign-in attempts per client address: at most `max` in a window of `windowS` seconds. A guessed
 * link is 256 random bits, so this is about load and noise, not guessing; it is per process (an
 * operator running several instances behind a balancer gets `max` per instance). */
export class SignInLimit {
  private readonly attempts = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly now: () => number,
    private readonly max = 10,
    private readonly windowS = 15 * 60,
  ) {}

  /** Counts an attempt; false when the address has used up its window (seconds to wait in `retryAfter`). */
  admit(address: string): { ok: true } | { ok: false; retryAfter: number } {
    const at = this.now();
    if (this.attempts.size > 10_000) for (const [a, w] of this.attempts) if (at - w.start >= this.windowS) this.attempts.delete(a);
    const window = this.attempts.get(address);
    if (!window || at - window.start >= this.windowS) {
      this.attempts.set(address, { start: at, count: 1 });
      return { ok: true };
    }
    if (window.count >= this.max) return { ok: false, retryAfter: window.start + this.windowS - at };
    window.count += 1;
    return { ok: true };
  }
}
