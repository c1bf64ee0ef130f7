/** How a session's answered call stood to its pin: `new` (no live pin), `hit` (the pinned channel
 * answered), `moved` (another channel did: the pinned one failed, or was not usable for the call). */
export type PinOutcome = 'new' | 'hit' | 'moved';

export interface SessionPinsOptions {
  /** Past this many pins, the least recently used go (default 10,000). */
  readonly maxEntries?: number;
  /** A pin not used for this long is forgotten (default one hour). */
  readonly idleMs?: number;
  /** The clock in milliseconds (injected: tests move it). */
  readonly now?: () => number;
  /** Told of every outcome (the metrics' `gateway_session_pins_total`). */
  readonly onOutcome?: (outcome: PinOutcome) => void;
}

export const SESSION_PINS_MAX_ENTRIES = 10_000;
export const SESSION_PINS_IDLE_MS = 3_600_000;

/**
 * Which channel served each conversation last, so that its next turns go there while it is usable and
 * the upstream's prompt cache is not emptied by a weighted shuffle (issue 36, item 3). A pin is keyed by
 * account, model and session id together: a tenant who guesses another's session id only ever reaches its
 * own pins. Memory is bounded by an LRU of `maxEntries` with an idle expiry; the pins are this instance's
 * (a restart, or another instance, starts the session anew at its next turn).
 */
export class SessionPins {
  private readonly entries = new Map<string, { channelId: string; until: number }>();
  private readonly maxEntries: number;
  private readonly idleMs: number;
  private readonly now: () => number;

  constructor(private readonly options: SessionPinsOptions = {}) {
    this.maxEntries = options.maxEntries ?? SESSION_PINS_MAX_ENTRIES;
    this.idleMs = options.idleMs ?? SESSION_PINS_IDLE_MS;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The channel a session is pinned to for a model, or null (none, or expired). */
  pinned(accountId: string, modelId: string, sessionId: string): string | null {
    const key = keyOf(accountId, modelId, sessionId);
    const entry = this.entries.get(key);
    if (entry === undefined) return null;
    if (entry.until <= this.now()) {
      this.entries.delete(key);
      return null;
    }
    return entry.channelId;
  }

  /** A session's call answered by `channelId`: the session is (re-)pinned there, and the outcome told. */
  served(accountId: string, modelId: string, sessionId: string, channelId: string): PinOutcome {
    const before = this.pinned(accountId, modelId, sessionId);
    const outcome: PinOutcome = before === null ? 'new' : before === channelId ? 'hit' : 'moved';
    const key = keyOf(accountId, modelId, sessionId);
    // Deleted first so that the Map's insertion order is the order of last use.
    this.entries.delete(key);
    this.entries.set(key, { channelId, until: this.now() + this.idleMs });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.options.onOutcome?.(outcome);
    return outcome;
  }
}

// NUL occurs in no account id or catalogue model id, and the session id comes last: no two triples share a key.
const keyOf = (accountId: string, modelId: string, sessionId: string) => `${accountId}\u0000${modelId}\u0000${sessionId}`;
