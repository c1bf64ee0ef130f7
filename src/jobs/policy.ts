import type { JobOutcome, JobQueueOptions } from './port';

// The rules both implementations share, so that code tested on the embedded queue behaves the
// same on Redis.

export const DEFAULT_CONCURRENCY = 8;
export const DEFAULT_MAX_ATTEMPTS = 20;
export const DEFAULT_BACKOFF_MS = { first: 1_000, max: 60_000 } as const;
export const DEFAULT_CLOSE_GRACE_MS = 10_000;

export interface Policy {
  readonly concurrency: number;
  readonly maxAttempts: number;
  readonly backoffMs: { readonly first: number; readonly max: number };
  readonly onError: NonNullable<JobQueueOptions['onError']>;
  readonly onRun: NonNullable<JobQueueOptions['onRun']>;
}

export function policyOf(options: JobQueueOptions): Policy {
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const backoffMs = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  positiveInteger('concurrency', concurrency);
  positiveInteger('maxAttempts', maxAttempts);
  if (!(backoffMs.first >= 0 && backoffMs.max >= backoffMs.first)) {
    throw new TypeError(`backoffMs needs 0 <= first <= max, got ${JSON.stringify(backoffMs)}`);
  }
  const { onError, onRun } = options;
  // Hooks log and count; one that throws must not turn a finished run into a failed one.
  return {
    concurrency,
    maxAttempts,
    backoffMs,
    onError: (...args) => {
      try {
        onError?.(...args);
      } catch {
        // ignored: see above
      }
    },
    onRun: (...args) => {
      try {
        onRun?.(...args);
      } catch {
        // ignored: see above
      }
    },
  };
}

export function positiveInteger(what: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`${what} must be a positive integer, got ${value}`);
}

/** The delay after the `failures`-th failed run in a row. */
export function backoffDelay(policy: Policy, failures: number): number {
  const { first, max } = policy.backoffMs;
  return Math.min(max, first * 2 ** Math.min(failures - 1, 30));
}

// BullMQ queue names cannot hold ':' (it separates Redis key parts); the embedded queue refuses
// the same names so that nothing working there breaks once REDIS_URL is set.
const NAME = /^[A-Za-z0-9_.-]{1,100}$/;

export function checkName(name: string): void {
  if (!NAME.test(name)) throw new TypeError(`job name must match ${NAME}, got ${JSON.stringify(name)}`);
}

export function checkAdd(id: string, delayMs: number | undefined): void {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError('a job needs a non-empty id');
  if (delayMs !== undefined && !(Number.isFinite(delayMs) && delayMs >= 0)) {
    throw new TypeError(`delayMs must be a finite number >= 0, got ${delayMs}`);
  }
}

/** Redis keeps data as JSON; the embedded queue hands over the same copy, so a Date or a BigInt fails (or changes) in both. */
export function jsonCopy<D>(data: D): D {
  return JSON.parse(JSON.stringify(data)) as D;
}

/** A handler's answer, or the error a malformed answer is (counted as a failed run). */
export function checkOutcome(outcome: unknown): JobOutcome {
  if (typeof outcome === 'object' && outcome !== null) {
    if ('done' in outcome && outcome.done === true) return { done: true };
    if ('againInMs' in outcome && typeof outcome.againInMs === 'number' && Number.isFinite(outcome.againInMs) && outcome.againInMs >= 0) {
      return { againInMs: outcome.againInMs };
    }
  }
  throw new TypeError(`a job handler must resolve {done: true} or {againInMs: n >= 0}, got ${describe(outcome)}`);
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Whether `work` settled (either way) within `ms`; the timer does not keep the process alive. */
export async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
