/** A part of what the gateway needs to serve, as `/readyz` names it. */
export type Part = 'event_store' | 'database' | 'redis' | 'projections' | 'warm_start';

/** One part's check: resolves (with what to show about it, if anything) when the part serves;
 * throws when it does not, a `NotReady` when the reason is fit to show. */
export interface Check {
  readonly part: Part;
  run(): Promise<Record<string, unknown> | void>;
}

/** A part that answers but is not fit to serve (projections too far behind, Redis known down):
 * its message is shown as it is. Any other failure is shown as "failed" and logged. */
export class NotReady extends Error {}

export interface PartReport {
  readonly status: 'ok' | 'failing';
  readonly error?: string;
  readonly [detail: string]: unknown;
}

export interface ReadinessReport {
  readonly status: 'ready' | 'not_ready' | 'shutting_down';
  /** The failing parts (`shutdown` while the gateway drains); empty when ready. */
  readonly failing: readonly string[];
  readonly checks: Readonly<Record<string, PartReport>>;
}

export interface Verdict {
  readonly ready: boolean;
  readonly report: ReadinessReport;
}

export interface ReadinessOptions {
  /** Whether the gateway is shutting down (then it is not ready, whatever its parts say). */
  readonly draining: () => boolean;
  /** How long one check may take (default 2 s): a part that has not answered by then is failing. */
  readonly timeoutMs?: number;
  /** How long a verdict is reused (default 1 s): load balancers probe often. */
  readonly cacheMs?: number;
  /** Told when a part starts failing (with the real error) and when it is back. */
  readonly onChange?: (part: Part, error: unknown | null) => void;
}

export const READY_TIMEOUT_MS = 2_000;
export const READY_CACHE_MS = 1_000;

const SHUTTING_DOWN: Verdict = {
  ready: false,
  report: { status: 'shutting_down', failing: ['shutdown'], checks: { shutdown: { status: 'failing', error: 'the gateway is shutting down' } } },
};

type Outcome = { ok: true; details: Record<string, unknown> } | { ok: false; error: unknown };

/**
 * Whether the gateway can serve: every check run at once, each within its time limit, the verdict
 * reused for a short while and shared by the probes that ask meanwhile. A check that is still
 * waiting for its part (a database that stopped answering) is not started again: probes keep being
 * answered (503) at once instead of piling up connections behind it.
 */
export class Readiness {
  private readonly timeoutMs: number;
  private readonly cacheMs: number;
  private readonly pending = new Map<Part, { startedAt: number; outcome: Promise<Outcome> }>();
  private readonly failing = new Set<Part>();
  private latest: { at: number; verdict: Promise<Verdict> } | null = null;

  constructor(
    private readonly checks: readonly Check[],
    private readonly options: ReadinessOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? READY_TIMEOUT_MS;
    this.cacheMs = options.cacheMs ?? READY_CACHE_MS;
  }

  verdict(): Promise<Verdict> {
    if (this.options.draining()) return Promise.resolve(SHUTTING_DOWN);
    const now = performance.now();
    if (this.latest && now - this.latest.at < this.cacheMs) return this.latest.verdict;
    const verdict = this.evaluate();
    this.latest = { at: now, verdict };
    // Cached from when it is known, not from when it was asked for.
    void verdict.then(() => {
      if (this.latest?.verdict === verdict) this.latest = { at: performance.now(), verdict };
    });
    return verdict;
  }

  private async evaluate(): Promise<Verdict> {
    const outcomes = await Promise.all(this.checks.map((check) => this.outcomeOf(check)));
    const checks: Record<string, PartReport> = {};
    const failing: Part[] = [];
    this.checks.forEach((check, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) checks[check.part] = { status: 'ok', ...outcome.details };
      else {
        failing.push(check.part);
        checks[check.part] = { status: 'failing', error: publicReason(outcome.error, this.timeoutMs) };
      }
      this.tell(check.part, outcome);
    });
    // Shutting down while the checks ran: that is the answer.
    if (this.options.draining()) return SHUTTING_DOWN;
    return { ready: failing.length === 0, report: { status: failing.length === 0 ? 'ready' : 'not_ready', failing, checks } };
  }

  /** The check's outcome within its time limit, counted from when its current run started. */
  private outcomeOf(check: Check): Promise<Outcome> {
    let run = this.pending.get(check.part);
    if (!run) {
      const outcome: Promise<Outcome> = Promise.resolve()
        .then(() => check.run())
        .then(
          (details) => ({ ok: true as const, details: details ?? {} }),
          (error: unknown) => ({ ok: false as const, error }),
        )
        .finally(() => this.pending.delete(check.part));
      run = { startedAt: performance.now(), outcome };
      this.pending.set(check.part, run);
    }
    const left = run.startedAt + this.timeoutMs - performance.now();
    if (left <= 0) return Promise.resolve({ ok: false, error: new CheckTimeout() });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<Outcome>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, error: new CheckTimeout() }), left);
    });
    return Promise.race([run.outcome, late]).finally(() => clearTimeout(timer));
  }

  private tell(part: Part, outcome: Outcome) {
    if (outcome.ok === this.failing.has(part)) {
      if (outcome.ok) this.failing.delete(part);
      else this.failing.add(part);
      this.options.onChange?.(part, outcome.ok ? null : outcome.error);
    }
  }
}

class CheckTimeout extends Error {}

/** What the probe is told: no connection strings or host names from a driver's error message
 * (the endpoint needs no credentials); the log has the real error. */
function publicReason(error: unknown, timeoutMs: number): string {
  if (error instanceof CheckTimeout) return `no answer within ${timeoutMs / 1000} s`;
  if (error instanceof NotReady) return error.message;
  return 'failed (the gateway log has the error)';
}
