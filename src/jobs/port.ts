/**
 * Background jobs: polling an upstream task until it ends, running an async call, expiring
 * overdue tasks. Callers make their jobs idempotent (a decider refuses a transition that already
 * happened), so delivery is at least once: a job may run again after a crash or a lost lock,
 * never silently not at all while its queue keeps it.
 */

/** What a run of a job asks for next. */
export type JobOutcome = { readonly done: true } | { readonly againInMs: number };

export interface JobContext {
  /**
   * 1 + the failed runs since the job last ran without throwing. A poller that has answered
   * `againInMs` for an hour starts over at 1 after a blip, rather than carrying old failures
   * towards `maxAttempts` and the longest back-off.
   */
  readonly attempt: number;
  /** Aborted when the queue closes: end soon, or the run is given up after the close's grace. */
  readonly signal: AbortSignal;
}

export type JobHandler<D> = (data: D, context: JobContext) => Promise<JobOutcome>;

export interface JobQueue {
  readonly kind: 'in-process' | 'bullmq';
  /** Registers the handler of a job name; all handlers are registered before start(). */
  handle<D extends Record<string, unknown>>(name: string, handler: JobHandler<D>, options?: { concurrency?: number }): void;
  /**
   * Adds a job. At most one job per `id` (within its name) exists at a time (waiting, delayed or
   * running): adding an id that exists does nothing (resolves false). `data` must be JSON: the
   * handler receives a JSON copy. Rejects with JobQueueUnavailableError when the queue's store
   * cannot take the job now (Redis down), JobQueueClosedError after close().
   */
  add<D extends Record<string, unknown>>(name: string, data: D, options: { id: string; delayMs?: number }): Promise<boolean>;
  start(): Promise<void>;
  /** Stops taking jobs, aborts the context signal of runs in progress and waits for them (at most `graceMs`), closes connections. */
  close(graceMs?: number): Promise<void>;
}

/** How a run ended, for metrics: `again` also covers a run interrupted by close (it runs again). */
export type RunOutcome = 'done' | 'again' | 'retry' | 'dropped';

export interface JobQueueOptions {
  /** Runs of one job name at a time in this process, unless handle() says otherwise. Default 8. */
  readonly concurrency?: number;
  /** Failed runs in a row after which a job is dropped. Default 20. */
  readonly maxAttempts?: number;
  /** Back-off after the n-th failure in a row: first · 2^(n-1), at most max. Default 1 s, 60 s. */
  readonly backoffMs?: { readonly first: number; readonly max: number };
  /** Every failed run; `final` when the job is dropped. A log hook: it must not throw (if it does, that is ignored). */
  readonly onError?: (name: string, id: string, error: unknown, attempt: number, final: boolean) => void;
  /**
   * Every finished run and how long it took, for metrics. Hooks fire once the outcome is in effect
   * (after `done` or a drop, the id can already be added again).
   */
  readonly onRun?: (name: string, outcome: RunOutcome, ms: number) => void;
}

/** The queue's store cannot take a job now (Redis unreachable or not answering). Jobs already queued are kept. */
export class JobQueueUnavailableError extends Error {
  override readonly name = 'JobQueueUnavailableError';
}

export class JobQueueClosedError extends Error {
  override readonly name = 'JobQueueClosedError';
  constructor() {
    super('the job queue is closed');
  }
}
