import { randomBytes } from 'node:crypto';
import { DelayedError, isNotConnectionError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { JobHandler, JobOutcome, JobQueue, JobQueueOptions } from './port';
import { JobQueueClosedError, JobQueueUnavailableError } from './port';
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

export interface BullMqJobQueueOptions extends JobQueueOptions {
  readonly redisUrl: string;
  /** First part of every Redis key (BullMQ's `prefix`): `<prefix>:<job name>:…`. Default `gw:jobs`. */
  readonly prefix?: string;
  /**
   * How long a worker's claim on a running job lasts; the worker renews it every half of it while
   * the handler runs, so a long handler is fine. Only a worker that died (or whose event loop was
   * blocked that long) loses it. Default 30 s.
   */
  readonly lockDurationMs?: number;
  /**
   * How often the workers look for jobs whose claim expired and put them back in the queue. A job
   * of a dead worker runs again after lockDuration + up to two intervals (marked on one pass, moved
   * on the next): about a minute with the defaults, which a media task poll can wait, for one Redis
   * round trip per job name every 30 s. All instances must use the same value: the check is paced
   * by a Redis key with this TTL, which any worker sets. Default 30 s.
   */
  readonly stalledIntervalMs?: number;
  /**
   * Worker deaths a job survives (BullMQ counts them over the job's whole life, a poller's too)
   * before it is dropped and reported to onError as final: a job that kills its worker every time
   * (out of memory) must not take every instance down in turn. A close() is not a death: it gives
   * the job back. Default 3.
   */
  readonly maxStalledCount?: number;
  /** How long add() waits for Redis to answer, and start() for a first connection. Default 2 s. */
  readonly redisTimeoutMs?: number;
  /** Redis became unreachable: once per outage, not per command. */
  readonly onUnavailable?: (error: Error) => void;
  /** Redis answers again after an outage. */
  readonly onAvailable?: () => void;
  /** BullMQ's own trouble outside a handler (a lost lock, a bookkeeping command that failed). */
  readonly onWorkerError?: (name: string, error: Error) => void;
}

export const DEFAULT_PREFIX = 'gw:jobs';
const DEFAULTS = { lockDurationMs: 30_000, stalledIntervalMs: 30_000, maxStalledCount: 3, redisTimeoutMs: 2_000 };
const KEEP_FAILED = { age: 7 * 24 * 3600, count: 1_000 };

type Data = Record<string, unknown>;

/** What Redis holds for a job: the caller's data and the bookkeeping that must survive a restart. */
interface Envelope {
  readonly id: string;
  readonly data: Data;
  /** Failed runs in a row (BullMQ's attemptsMade never goes back to 0; see JobContext.attempt). */
  readonly failures: number;
}

interface Lane {
  readonly handler: JobHandler<Data>;
  readonly concurrency: number;
}

const GRACE_OVER = Symbol('grace over');

// Redis keeps a reconnecting client's commands until it is back; the workers dial again every
// 2 s at most (BullMQ's own default climbs to 20 s), so they resume soon after an outage.
const retryStrategy = (times: number) => Math.min(times * 200, 2_000);

/**
 * One BullMQ Queue and one Worker per job name rather than one queue for all: a Worker's
 * concurrency is per queue, and `concurrency` is per job name (a slow family of media polls must
 * not take the slots of task expiries). The cost is two connections per job name per instance
 * (the worker's commands and its blocking fetch), plus one shared by every Queue for add().
 *
 * "At most one job per id": BullMQ's deduplication (simple mode) on the caller's id, while the
 * job's own BullMQ id is `<id>#<random>` (':' written %3A: BullMQ refuses it in ids). One script
 * checks the dedup key and stores the job, atomically, and returns the id of the job holding the
 * key, so add() tells its own new job (its random suffix) from an existing one without a race.
 * The dedup key goes when the job completes or fails, so the id can be used again, while a failed
 * job's record is kept a while for inspection (its BullMQ id differs from the next job's).
 */
export class BullMqJobQueue implements JobQueue {
  readonly kind = 'bullmq' as const;
  private readonly policy: Policy;
  private readonly options: BullMqJobQueueOptions;
  private readonly prefix: string;
  private readonly redisTimeoutMs: number;
  private readonly lanes = new Map<string, Lane>();
  private readonly queues = new Map<string, Queue<Envelope>>();
  private readonly workers: Worker<Envelope>[] = [];
  /** add()'s connection, shared by the Queues; its state is the queue's view of Redis. */
  private readonly producer: Redis;
  private readonly stop = new AbortController();
  private readonly graceOver: Promise<typeof GRACE_OVER>;
  private endGrace: () => void = () => {};
  /** Resolves at the first connection: add() before it waits for it, add() during an outage does not. */
  private readonly firstReady: Promise<void>;
  private outage: Error | null = null;
  private started = false;
  private closing: Promise<void> | null = null;

  constructor(options: BullMqJobQueueOptions) {
    this.policy = policyOf(options);
    this.options = options;
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    this.redisTimeoutMs = options.redisTimeoutMs ?? DEFAULTS.redisTimeoutMs;
    for (const key of ['lockDurationMs', 'stalledIntervalMs', 'maxStalledCount', 'redisTimeoutMs'] as const) {
      if (options[key] !== undefined) positiveInteger(key, options[key]);
    }
    this.graceOver = new Promise((resolve) => {
      this.endGrace = () => resolve(GRACE_OVER);
    });
    // One retry after a reconnect, then the command fails: add() is bounded by redisTimeoutMs
    // anyway, and Queue's start-up commands must not queue up forever.
    this.producer = new Redis(options.redisUrl, { maxRetriesPerRequest: 1, retryStrategy });
    this.producer.on('error', (error: Error) => this.lost(error));
    this.producer.on('close', () => this.lost(new Error('connection to Redis closed')));
    this.firstReady = new Promise((resolve) => this.producer.once('ready', () => resolve()));
    this.producer.on('ready', () => {
      if (this.outage === null) return;
      this.outage = null;
      safely(() => this.options.onAvailable?.());
    });
  }

  handle<D extends Data>(name: string, handler: JobHandler<D>, options: { concurrency?: number } = {}): void {
    checkName(name);
    if (this.started) throw new Error(`job "${name}": handlers are registered before start()`);
    if (this.lanes.has(name)) throw new Error(`job "${name}" already has a handler`);
    const concurrency = options.concurrency ?? this.policy.concurrency;
    positiveInteger('concurrency', concurrency);
    this.lanes.set(name, { handler: handler as JobHandler<Data>, concurrency });
  }

  /**
   * While Redis is known to be unreachable, rejects at once with JobQueueUnavailableError (no
   * request waits on a dead connection); before the first connection, or when Redis takes the
   * connection but does not answer, after redisTimeoutMs. In the last case the job may still be
   * stored once Redis answers: harmless, since a later add of the same id finds it, and handlers
   * are idempotent.
   */
  async add<D extends Data>(name: string, data: D, options: { id: string; delayMs?: number }): Promise<boolean> {
    if (this.closing) throw new JobQueueClosedError();
    checkName(name);
    checkAdd(options.id, options.delayMs);
    if (this.producer.status !== 'ready' && this.outage === null) await within(this.firstReady, this.redisTimeoutMs);
    if (this.producer.status !== 'ready') {
      throw new JobQueueUnavailableError(`Redis cannot be reached${this.outage ? `: ${this.outage.message}` : ` (${this.producer.status})`}`);
    }
    const jobId = `${jobIdPart(options.id)}#${randomBytes(6).toString('hex')}`;
    const envelope: Envelope = { id: options.id, data, failures: 0 };
    const adding = this.queueFor(name).add(name, envelope, {
      jobId,
      deduplication: { id: options.id },
      delay: options.delayMs ?? 0,
    });
    let added: Job<Envelope> | undefined;
    const answered = await within(
      adding.then((job) => {
        added = job;
      }),
      this.redisTimeoutMs,
    );
    if (!answered) {
      adding.catch(() => {});
      throw new JobQueueUnavailableError(`Redis did not answer within ${this.redisTimeoutMs} ms`);
    }
    if (!added) {
      const error = await adding.then(() => null, (thrown: unknown) => thrown);
      throw isConnectionError(error) ? new JobQueueUnavailableError(`Redis cannot be reached: ${messageOf(error)}`) : error;
    }
    return added.id === jobId;
  }

  /**
   * Starts a worker per handled job name and waits (at most redisTimeoutMs) for the connections,
   * so that an add() right after start() does not fail on a connection still being made. With
   * Redis down it returns anyway: the workers keep dialling and start on their own once it is back.
   */
  async start(): Promise<void> {
    if (this.closing) throw new JobQueueClosedError();
    if (this.started) return;
    this.started = true;
    for (const [name, lane] of this.lanes) this.workers.push(this.worker(name, lane));
    await within(Promise.all([this.firstReady, ...this.workers.map((worker) => worker.waitUntilReady())]), this.redisTimeoutMs);
  }

  close(graceMs: number = DEFAULT_CLOSE_GRACE_MS): Promise<void> {
    this.closing ??= this.shutdown(graceMs);
    return this.closing;
  }

  private async shutdown(graceMs: number): Promise<void> {
    this.stop.abort(new JobQueueClosedError());
    // After the grace, a run still going is given up: its job goes back to the queue at once
    // (another instance, or this one's successor, picks it up) and the handler is left behind.
    const grace = setTimeout(this.endGrace, graceMs);
    grace.unref();
    const workersClosed = Promise.allSettled(this.workers.map((worker) => worker.close()));
    // Giving a job back needs Redis. If it does not answer, the connections are dropped and the
    // job's lock expires instead: another worker takes it (stalled), and close() still ends.
    if (!(await within(workersClosed, graceMs + this.redisTimeoutMs))) {
      for (const worker of this.workers) hangUp(worker);
    }
    clearTimeout(grace);
    // The Queues share the producer connection (BullMQ leaves a caller's connection open).
    await within(Promise.allSettled([...this.queues.values()].map((queue) => queue.close())), this.redisTimeoutMs);
    if (!(await within(this.producer.quit(), this.redisTimeoutMs))) this.producer.disconnect();
  }

  private queueFor(name: string): Queue<Envelope> {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue<Envelope>(name, {
        connection: this.producer,
        prefix: this.prefix,
        defaultJobOptions: {
          // Retries and their back-off are the processor's (consecutive failures, capped back-off);
          // BullMQ's own would count every failure of a poller's life.
          attempts: 1,
          removeOnComplete: true,
          removeOnFail: KEEP_FAILED,
        },
        // Nothing here reads the queue's event stream (no QueueEvents): keep it short (BullMQ: 10,000 per queue).
        streams: { events: { maxLen: 1_000 } },
      });
      // Connection trouble is reported by the producer's own listeners.
      queue.on('error', () => {});
      this.queues.set(name, queue);
    }
    return queue;
  }

  private worker(name: string, lane: Lane): Worker<Envelope> {
    const worker = new Worker<Envelope>(name, (job, token) => this.process(name, lane, job, token), {
      // BullMQ requires maxRetriesPerRequest null on a worker's connections (a blocking fetch must
      // not fail for a reconnect); it would force it anyway.
      connection: { url: this.options.redisUrl, maxRetriesPerRequest: null, retryStrategy },
      prefix: this.prefix,
      concurrency: lane.concurrency,
      lockDuration: this.options.lockDurationMs ?? DEFAULTS.lockDurationMs,
      stalledInterval: this.options.stalledIntervalMs ?? DEFAULTS.stalledIntervalMs,
      maxStalledCount: this.options.maxStalledCount ?? DEFAULTS.maxStalledCount,
    });
    // An EventEmitter 'error' without a listener throws: the process must outlive a Redis outage.
    // Connection errors are the producer's to report (once per outage); the worker redials alone.
    worker.on('error', (error) => {
      if (!isConnectionError(error)) safely(() => this.options.onWorkerError?.(name, error));
    });
    // Hooks fire once Redis reflects the outcome (the job gone, its id free again); 'completed'
    // and 'failed' come after that, the processor's own reports after its move to delayed.
    worker.on('completed', (_job, ms) => this.policy.onRun(name, 'done', ms));
    worker.on('failed', (job, error) => {
      if (error instanceof Dropped) {
        this.policy.onRun(name, 'dropped', error.ms);
        this.policy.onError(name, error.id, error.cause, error.attempt, true);
      } else {
        // BullMQ's own decision: a job that stalled (its worker died) once too often.
        this.policy.onRun(name, 'dropped', 0);
        this.policy.onError(name, job?.data.id ?? job?.id ?? '', error, (job?.data.failures ?? 0) + 1, true);
      }
    });
    return worker;
  }

  /** Resolves (the job completes) with the run's duration for the 'completed' listener. */
  private async process(name: string, lane: Lane, job: Job<Envelope>, token: string | undefined): Promise<number> {
    if (token === undefined) throw new Error('BullMQ gave no lock token');
    const { id, data, failures } = job.data;
    const attempt = failures + 1;
    const signal = this.stop.signal;
    const started = performance.now();
    const run = (async () => checkOutcome(await lane.handler(data, { attempt, signal })))();
    const settled = await Promise.race([
      run.then(
        (outcome): { outcome: JobOutcome } => ({ outcome }),
        (error: unknown) => ({ error }),
      ),
      this.graceOver,
    ]);
    const ms = performance.now() - started;
    if (settled === GRACE_OVER || ('error' in settled && signal.aborted)) {
      // Stopped by close(), not the job's failure: it runs again without counting one.
      run.catch(() => {});
      await this.runAgain(job, token, 0, 0);
      this.policy.onRun(name, 'again', ms);
      throw new DelayedError();
    }
    if ('outcome' in settled) {
      if ('done' in settled.outcome) return ms; // completed, and removed (removeOnComplete)
      await this.runAgain(job, token, settled.outcome.againInMs, 0);
      this.policy.onRun(name, 'again', ms);
      throw new DelayedError();
    }
    // attempts: 1, so BullMQ fails the job (and frees its id) at once; the 'failed' listener reports it.
    if (attempt >= this.policy.maxAttempts) throw new Dropped(id, settled.error, attempt, ms);
    await this.runAgain(job, token, backoffDelay(this.policy, attempt), attempt);
    this.policy.onRun(name, 'retry', ms);
    this.policy.onError(name, id, settled.error, attempt, false);
    throw new DelayedError();
  }

  /**
   * The same job (id, data) again after `ms`, BullMQ's documented pattern for a job that delays
   * itself: move it to delayed with the run's lock token, then throw DelayedError so that the
   * worker neither completes nor fails it.
   */
  private async runAgain(job: Job<Envelope>, token: string, ms: number, failures: number): Promise<void> {
    if (job.data.failures !== failures) await job.updateData({ ...job.data, failures });
    await job.moveToDelayed(Date.now() + ms, token);
  }

  /** The first failure of an outage is reported; the clients reconnect by themselves. */
  private lost(error: Error): void {
    if (this.outage !== null || this.closing) return;
    this.outage = error;
    safely(() => this.options.onUnavailable?.(error));
  }
}

/**
 * Drops a worker's connections without waiting for anything. Not BullMQ's disconnect(): it waits
 * for the client's 'end', which an ioredis client between two reconnection attempts never emits
 * (it stops dialling, though), so a close during an outage would wait forever, and the
 * blocking connection, dropped after it, would keep dialling and the process alive. A run stuck
 * on a command queued for the dead connection stays pending: a promise, no timer.
 */
function hangUp(worker: Worker<Envelope>): void {
  const backend = worker.getBackend();
  for (const client of [backend.client, backend.blockingClient]) {
    void client?.then(
      (redis) => redis.disconnect(),
      () => {},
    );
  }
}

/** Injective (so two ids never share a BullMQ id), and readable in a Redis browser. */
function jobIdPart(id: string): string {
  return id.replaceAll('%', '%25').replaceAll(':', '%3A');
}

/** A handler that failed maxAttempts times in a row; carries what the 'failed' listener reports. */
class Dropped extends UnrecoverableError {
  constructor(
    readonly id: string,
    override readonly cause: unknown,
    readonly attempt: number,
    readonly ms: number,
  ) {
    super(`dropped after ${attempt} failed runs in a row: ${messageOf(cause)}`);
  }
}

function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (!isNotConnectionError(error)) return true;
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EPIPE' || code === 'ENOTFOUND' || error.name === 'MaxRetriesPerRequestError';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function safely(hook: () => void): void {
  try {
    hook();
  } catch {
    // a log hook that throws changes nothing
  }
}
