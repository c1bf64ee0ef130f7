import type { JobHandler, JobOutcome, JobQueue, JobQueueOptions } from './port';
import { JobQueueClosedError } from './port';
import {
  backoffDelay,
  checkAdd,
  checkName,
  checkOutcome,
  DEFAULT_CLOSE_GRACE_MS,
  policyOf,
  positiveInteger,
  within,
  type Policy,
} from './policy';

// The embedded default: timers in this process. Nothing is written anywhere, so the jobs die
// with the process; the gateway adds them again at start from its task views (a poller per
// task still running, an expiry per task with a deadline), which is also what makes the
// at-least-once contract hold here.

type Data = Record<string, unknown>;

interface Job {
  readonly id: string;
  /** Kept as JSON: every run gets a fresh copy, as from Redis, so a handler cannot change the next run's data. */
  readonly json: string;
  /** Failed runs in a row. */
  failures: number;
  timer: NodeJS.Timeout | null;
}

interface Lane {
  readonly name: string;
  readonly handler: JobHandler<Data>;
  readonly concurrency: number;
  /** Every job of this name that exists (waiting, delayed or running), by id. */
  readonly jobs: Map<string, Job>;
  /** Due jobs in the order they became due. */
  readonly due: Job[];
  running: number;
}

export class InProcessJobQueue implements JobQueue {
  readonly kind = 'in-process' as const;
  private readonly policy: Policy;
  private readonly lanes = new Map<string, Lane>();
  private readonly runs = new Set<Promise<void>>();
  private readonly stop = new AbortController();
  private started = false;
  private closing: Promise<void> | null = null;

  constructor(options: JobQueueOptions = {}) {
    this.policy = policyOf(options);
  }

  handle<D extends Data>(name: string, handler: JobHandler<D>, options: { concurrency?: number } = {}): void {
    checkName(name);
    if (this.started) throw new Error(`job "${name}": handlers are registered before start()`);
    if (this.lanes.has(name)) throw new Error(`job "${name}" already has a handler`);
    const concurrency = options.concurrency ?? this.policy.concurrency;
    positiveInteger('concurrency', concurrency);
    this.lanes.set(name, { name, handler: handler as JobHandler<Data>, concurrency, jobs: new Map(), due: [], running: 0 });
  }

  async add<D extends Data>(name: string, data: D, options: { id: string; delayMs?: number }): Promise<boolean> {
    if (this.closing) throw new JobQueueClosedError();
    checkAdd(options.id, options.delayMs);
    const lane = this.lanes.get(name);
    // There is no other process to run it: a job without a handler would wait forever.
    if (!lane) throw new Error(`job "${name}" has no handler (handle() it before adding)`);
    if (lane.jobs.has(options.id)) return false;
    const job: Job = { id: options.id, json: JSON.stringify(data), failures: 0, timer: null };
    lane.jobs.set(job.id, job);
    this.schedule(lane, job, options.delayMs ?? 0);
    return true;
  }

  async start(): Promise<void> {
    if (this.closing) throw new JobQueueClosedError();
    this.started = true;
    for (const lane of this.lanes.values()) this.pump(lane);
  }

  close(graceMs: number = DEFAULT_CLOSE_GRACE_MS): Promise<void> {
    this.closing ??= this.shutdown(graceMs);
    return this.closing;
  }

  private async shutdown(graceMs: number): Promise<void> {
    for (const lane of this.lanes.values()) {
      for (const job of lane.jobs.values()) if (job.timer) clearTimeout(job.timer);
      lane.jobs.clear();
      lane.due.length = 0;
    }
    this.stop.abort(new JobQueueClosedError());
    // A handler that ignores its signal is left behind after the grace; its answer is dropped.
    await within(Promise.allSettled(this.runs), graceMs);
  }

  // Every path goes through a timer, even 0 ms: add() returns before the handler starts, as on Redis.
  private schedule(lane: Lane, job: Job, ms: number): void {
    if (this.closing) return;
    job.timer = setTimeout(() => {
      job.timer = null;
      lane.due.push(job);
      this.pump(lane);
    }, ms);
    // A pending poll must not hold the process open: shutdown is close()'s decision.
    job.timer.unref();
  }

  private pump(lane: Lane): void {
    while (this.started && !this.closing && lane.running < lane.concurrency) {
      const job = lane.due.shift();
      if (!job) return;
      const run = this.run(lane, job);
      this.runs.add(run);
      void run.then(() => this.runs.delete(run));
    }
  }

  private async run(lane: Lane, job: Job): Promise<void> {
    lane.running++;
    const attempt = job.failures + 1;
    const signal = this.stop.signal;
    const started = performance.now();
    let outcome: JobOutcome | null = null;
    let error: unknown = null;
    try {
      outcome = checkOutcome(await lane.handler(JSON.parse(job.json) as Data, { attempt, signal }));
    } catch (thrown) {
      error = thrown;
    }
    const ms = performance.now() - started;
    lane.running--;
    if (outcome && 'done' in outcome) {
      lane.jobs.delete(job.id);
      this.policy.onRun(lane.name, 'done', ms);
    } else if (outcome) {
      job.failures = 0;
      this.schedule(lane, job, outcome.againInMs);
      this.policy.onRun(lane.name, 'again', ms);
    } else if (signal.aborted) {
      // Stopped by close(): not the job's failure (and nothing is scheduled any more).
      this.policy.onRun(lane.name, 'again', ms);
    } else if (attempt >= this.policy.maxAttempts) {
      lane.jobs.delete(job.id);
      this.policy.onRun(lane.name, 'dropped', ms);
      this.policy.onError(lane.name, job.id, error, attempt, true);
    } else {
      job.failures = attempt;
      this.schedule(lane, job, backoffDelay(this.policy, attempt));
      this.policy.onRun(lane.name, 'retry', ms);
      this.policy.onError(lane.name, job.id, error, attempt, false);
    }
    this.pump(lane);
  }
}
