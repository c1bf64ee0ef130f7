import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  createJobQueue,
  JobQueueClosedError,
  JobQueueUnavailableError,
  type CreateJobQueueOptions,
  type JobQueue,
  type RunOutcome,
} from '../../src/jobs';
import { within } from '../../src/jobs/policy';

// One contract for both job queues: in-process always, BullMQ with REDIS_URL. Nothing here
// asserts a duration: delays are checked by order, waits poll for an event with a generous bound.

const REDIS_URL = process.env.REDIS_URL;
const REDIS_SERVER = '/usr/bin/redis-server';
// Every BullMQ key of this file starts with it; afterAll deletes them.
const BASE = `gw:test:jobs:${randomBytes(6).toString('hex')}`;
const FAST_BACKOFF = { first: 20, max: 80 };

let queueCount = 0;
const open: JobQueue[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A promise to release by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

interface Recorded {
  runs: RunOutcome[];
  errors: { name: string; id: string; message: string; attempt: number; final: boolean }[];
}

const targets = [
  { kind: 'in-process', skip: false, prefix: () => ({}) },
  { kind: 'bullmq', skip: !REDIS_URL, prefix: () => ({ redisUrl: REDIS_URL, prefix: `${BASE}:${++queueCount}` }) },
] as const;

afterEach(async () => {
  await Promise.all(open.splice(0).map((queue) => queue.close(500)));
});

afterAll(async () => {
  if (!REDIS_URL) return;
  const { Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL);
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${BASE}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

describe.each(targets)('job queue contract: $kind', ({ kind, skip, prefix }) => {
  async function queue(options: CreateJobQueueOptions = {}): Promise<{ q: JobQueue; recorded: Recorded }> {
    const recorded: Recorded = { runs: [], errors: [] };
    const q = await createJobQueue({
      ...prefix(),
      backoffMs: FAST_BACKOFF,
      onRun: (_name, outcome) => recorded.runs.push(outcome),
      onError: (name, id, error, attempt, final) =>
        recorded.errors.push({ name, id, message: error instanceof Error ? error.message : String(error), attempt, final }),
      ...options,
    });
    open.push(q);
    return { q, recorded };
  }

  it.skipIf(skip)('is the implementation asked for', async () => {
    const { q } = await queue();
    expect(q.kind).toBe(kind);
  });

  it.skipIf(skip)('runs a job with its data', async () => {
    const { q, recorded } = await queue();
    const seen: { data: unknown; attempt: number }[] = [];
    q.handle('echo', async (data, { attempt }) => {
      seen.push({ data, attempt });
      return { done: true };
    });
    await q.start();
    const data = { task: 'task_1', n: 2, nested: { list: [1, 'two', null] } };
    expect(await q.add('echo', data, { id: 'job-1' })).toBe(true);
    await eventually(() => recorded.runs.length === 1, 'the run');
    expect(seen).toEqual([{ data, attempt: 1 }]);
    expect(recorded.runs).toEqual(['done']);
    expect(recorded.errors).toEqual([]);
  });

  it.skipIf(skip)('runs a delayed job after the jobs due before it', async () => {
    const { q } = await queue();
    const order: string[] = [];
    q.handle('order', async (data: { tag: string }) => {
      order.push(data.tag);
      return { done: true };
    });
    await q.start();
    expect(await q.add('order', { tag: 'late' }, { id: 'late', delayMs: 600 })).toBe(true);
    expect(await q.add('order', { tag: 'now' }, { id: 'now' })).toBe(true);
    await eventually(() => order.length === 2, 'both jobs');
    expect(order).toEqual(['now', 'late']);
  });

  it.skipIf(skip)('runs the same job again after againInMs until it is done', async () => {
    const { q, recorded } = await queue();
    const seen: { data: unknown; attempt: number }[] = [];
    q.handle('poll', async (data, { attempt }) => {
      seen.push({ data: structuredClone(data), attempt });
      // A handler that changes its copy does not change the next run's data.
      (data as { scribble?: boolean }).scribble = true;
      return seen.length < 3 ? { againInMs: 20 } : { done: true };
    });
    await q.start();
    expect(await q.add('poll', { task: 'task_7' }, { id: 'poll:task_7' })).toBe(true);
    await eventually(() => recorded.runs.length === 3, 'three runs');
    expect(seen).toEqual([1, 2, 3].map(() => ({ data: { task: 'task_7' }, attempt: 1 })));
    expect(recorded.runs).toEqual(['again', 'again', 'done']);
  });

  it.skipIf(skip)('keeps one job per id: an add of an existing id does nothing, after done the id is free', async () => {
    const { q, recorded } = await queue();
    const seen: unknown[] = [];
    let release = gate();
    q.handle('dup', async (data) => {
      seen.push(data);
      await release.promise;
      return { done: true };
    });
    await q.start();
    expect(await q.add('dup', { v: 1 }, { id: 'x' })).toBe(true);
    await eventually(() => seen.length === 1, 'the first run');
    // Running.
    expect(await q.add('dup', { v: 2 }, { id: 'x' })).toBe(false);
    // Delayed, and waiting (the name's other id is independent).
    expect(await q.add('dup', { v: 3 }, { id: 'y', delayMs: 60_000 })).toBe(true);
    expect(await q.add('dup', { v: 4 }, { id: 'y' })).toBe(false);
    release.open();
    await eventually(() => recorded.runs.length === 1, 'the first run to end');
    expect(seen).toEqual([{ v: 1 }]);
    release = gate();
    release.open();
    expect(await q.add('dup', { v: 5 }, { id: 'x' })).toBe(true);
    await eventually(() => recorded.runs.length === 2, 'the second run');
    expect(seen).toEqual([{ v: 1 }, { v: 5 }]);
  });

  it.skipIf(skip)('keeps a polling job while it is delayed between runs', async () => {
    const { q, recorded } = await queue();
    let runs = 0;
    q.handle('tick', async () => {
      runs++;
      return runs < 2 ? { againInMs: 300 } : { done: true };
    });
    await q.start();
    expect(await q.add('tick', {}, { id: 't' })).toBe(true);
    await eventually(() => recorded.runs.length === 1, 'the first run');
    expect(await q.add('tick', {}, { id: 't' })).toBe(false);
    await eventually(() => recorded.runs.length === 2, 'the second run');
    expect(runs).toBe(2);
  });

  it.skipIf(skip)('retries a throwing handler with back-off, then drops it and reports it as final', async () => {
    const { q, recorded } = await queue({ maxAttempts: 3 });
    const attempts: number[] = [];
    q.handle('flaky', async (_data, { attempt }) => {
      attempts.push(attempt);
      throw new Error(`upstream said no (${attempt})`);
    });
    await q.start();
    expect(await q.add('flaky', { task: 'task_9' }, { id: 'f' })).toBe(true);
    await eventually(() => recorded.errors.some((e) => e.final), 'the drop');
    expect(attempts).toEqual([1, 2, 3]);
    expect(recorded.runs).toEqual(['retry', 'retry', 'dropped']);
    expect(recorded.errors.map((e) => [e.name, e.id, e.attempt, e.final])).toEqual([
      ['flaky', 'f', 1, false],
      ['flaky', 'f', 2, false],
      ['flaky', 'f', 3, true],
    ]);
    expect(recorded.errors[2]?.message).toBe('upstream said no (3)');
    // Dropped: the id is free again.
    expect(await q.add('flaky', { task: 'task_9' }, { id: 'f' })).toBe(true);
    await eventually(() => attempts.length === 4, 'the new job');
    expect(attempts[3]).toBe(1);
  });

  it.skipIf(skip)('counts failed runs in a row: a run that ends well starts the count over', async () => {
    const { q, recorded } = await queue({ maxAttempts: 2 });
    const attempts: number[] = [];
    q.handle('blip', async (_data, { attempt }) => {
      attempts.push(attempt);
      if (attempts.length === 1 || attempts.length === 3) throw new Error('blip');
      return attempts.length === 2 ? { againInMs: 10 } : { done: true };
    });
    await q.start();
    await q.add('blip', {}, { id: 'b' });
    await eventually(() => recorded.runs.includes('done'), 'the end');
    expect(attempts).toEqual([1, 2, 1, 2]);
    expect(recorded.runs).toEqual(['retry', 'again', 'retry', 'done']);
  });

  it.skipIf(skip)('counts a malformed answer as a failed run', async () => {
    const { q, recorded } = await queue({ maxAttempts: 1 });
    q.handle('bad', async () => ({ againInMs: -1 }));
    await q.start();
    await q.add('bad', {}, { id: 'bad' });
    await eventually(() => recorded.errors.length === 1, 'the drop');
    expect(recorded.errors[0]).toMatchObject({ id: 'bad', attempt: 1, final: true });
    expect(recorded.errors[0]?.message).toMatch(/againInMs/);
  });

  it.skipIf(skip)('runs at most `concurrency` jobs of a name at a time', async () => {
    const { q, recorded } = await queue();
    let active = 0;
    let most = 0;
    const release = gate();
    q.handle(
      'slow',
      async () => {
        active++;
        most = Math.max(most, active);
        await release.promise;
        active--;
        return { done: true };
      },
      { concurrency: 2 },
    );
    await q.start();
    for (let i = 0; i < 5; i++) expect(await q.add('slow', { i }, { id: `s${i}` })).toBe(true);
    await eventually(() => active === 2, 'two runs');
    // Were a third run allowed, it would have started by now (a miss here can only hide a bug, not fail a correct queue).
    await sleep(200);
    expect(active).toBe(2);
    release.open();
    await eventually(() => recorded.runs.length === 5, 'all five');
    expect(most).toBe(2);
  });

  it.skipIf(skip)('close() aborts the runs in progress and waits for them', async () => {
    const { q } = await queue();
    const events: string[] = [];
    q.handle('long', async (_data, { signal }) => {
      events.push('started');
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      events.push('aborted');
      await sleep(50);
      events.push('finished');
      return { done: true };
    });
    await q.start();
    await q.add('long', {}, { id: 'l' });
    await eventually(() => events.length === 1, 'the run');
    await q.close(5_000);
    events.push('closed');
    expect(events).toEqual(['started', 'aborted', 'finished', 'closed']);
    await expect(q.add('long', {}, { id: 'l2' })).rejects.toBeInstanceOf(JobQueueClosedError);
  });

  it.skipIf(skip)('close() waits at most graceMs for a handler that ignores its signal', async () => {
    const { q, recorded } = await queue();
    let started = false;
    q.handle('stuck', async () => {
      started = true;
      return new Promise(() => {});
    });
    await q.start();
    await q.add('stuck', {}, { id: 'stuck' });
    await eventually(() => started, 'the run');
    await q.close(200);
    // Not the job's failure: it is given up, not counted.
    expect(recorded.errors).toEqual([]);
  });
});

describe.skipIf(!REDIS_URL)('BullMQ job queue', () => {
  const options = (prefix: string): CreateJobQueueOptions => ({ redisUrl: REDIS_URL, prefix, backoffMs: FAST_BACKOFF });

  it('runs a delayed job added by an instance that has stopped since (restart)', async () => {
    const prefix = `${BASE}:restart`;
    const first = await createJobQueue(options(prefix));
    first.handle('expire', async () => {
      throw new Error('the first instance must not run it');
    });
    await first.start();
    expect(await first.add('expire', { task: 'task_3' }, { id: 'expire:task_3', delayMs: 500 })).toBe(true);
    await first.close(500);

    const seen: unknown[] = [];
    const second = await createJobQueue(options(prefix));
    open.push(second);
    second.handle('expire', async (data) => {
      seen.push(data);
      return { done: true };
    });
    await second.start();
    await eventually(() => seen.length === 1, 'the run on the second instance');
    expect(seen).toEqual([{ task: 'task_3' }]);
  });

  it('gives a run cut off by close() back to the queue, for the next instance, without counting a failure', async () => {
    const prefix = `${BASE}:handover`;
    const first = await createJobQueue(options(prefix));
    let started = false;
    first.handle('poll', async () => {
      started = true;
      return new Promise(() => {});
    });
    await first.start();
    await first.add('poll', { task: 'task_4' }, { id: 'poll:task_4' });
    await eventually(() => started, 'the first run');
    await first.close(100);

    const seen: { data: unknown; attempt: number }[] = [];
    const second = await createJobQueue(options(prefix));
    open.push(second);
    second.handle('poll', async (data, { attempt }) => {
      seen.push({ data, attempt });
      return { done: true };
    });
    await second.start();
    await eventually(() => seen.length === 1, 'the run on the second instance');
    expect(seen).toEqual([{ data: { task: 'task_4' }, attempt: 1 }]);
  });

  it('runs again the job of a worker that died mid-run (stalled)', async () => {
    const prefix = `${BASE}:stalled`;
    const { Worker } = await import('bullmq');
    const seen: unknown[] = [];
    const recorded: RunOutcome[] = [];
    const survivor = await createJobQueue({
      ...options(prefix),
      lockDurationMs: 1_000,
      stalledIntervalMs: 300,
      onRun: (_name, outcome) => recorded.push(outcome),
    });
    open.push(survivor);
    survivor.handle('media', async (data) => {
      seen.push(data);
      return { done: true };
    });
    // Added before the survivor's worker starts, so the doomed worker takes it.
    expect(await survivor.add('media', { task: 'task_5' }, { id: 'media:task_5' })).toBe(true);
    const doomed = new Worker('media', () => new Promise(() => {}), {
      connection: { url: REDIS_URL, maxRetriesPerRequest: null },
      prefix,
      lockDuration: 1_000,
      // As the survivor's: workers share the stalled check's pace (a Redis key with that TTL).
      stalledInterval: 300,
    });
    doomed.on('error', () => {});
    const active = new Promise((resolve) => doomed.once('active', resolve));
    await active;
    // Dies: connections dropped, lock no longer renewed, the run never finishes.
    await doomed.close(true);

    await survivor.start();
    await eventually(() => seen.length === 1, 'the run on the surviving worker');
    // The outcome is told once it has taken effect in Redis, a moment after the handler returns.
    await eventually(() => recorded.length === 1, 'the run told as done');
    expect(seen).toEqual([{ task: 'task_5' }]);
    expect(recorded).toEqual(['done']);
  });

  it.skipIf(!existsSync(REDIS_SERVER))('fails add() at once while Redis is down; the workers carry on once it is back; close() ends in an outage', async () => {
    const port = await freePort();
    const unavailable: string[] = [];
    let available = 0;
    const seen: unknown[] = [];
    const q = await createJobQueue({
      ...options(`${BASE}:outage`),
      redisUrl: `redis://127.0.0.1:${port}`,
      redisTimeoutMs: 300,
      // Short, so that BullMQ's loops left waiting on the dead connection after close() end soon.
      lockDurationMs: 2_000,
      stalledIntervalMs: 1_000,
      onUnavailable: (error) => unavailable.push(error.message),
      onAvailable: () => available++,
    });
    open.push(q);
    q.handle('later', async (data) => {
      seen.push(data);
      return { done: true };
    });
    let stuck = false;
    q.handle('stuck', async (_data, { signal }) => {
      stuck = true;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      throw new Error('aborted');
    });
    await q.start(); // returns although nothing listens
    await expect(q.add('later', { n: 1 }, { id: 'a' })).rejects.toBeInstanceOf(JobQueueUnavailableError);
    const started = performance.now();
    await expect(q.add('later', { n: 1 }, { id: 'a' })).rejects.toBeInstanceOf(JobQueueUnavailableError);
    // Known outage: no wait at all (a loose bound, far above the ~1 ms it takes, far below a timeout).
    expect(performance.now() - started).toBeLessThan(250);
    expect(unavailable).toHaveLength(1);

    let server: ChildProcess | null = null;
    try {
      server = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      await eventually(async () => q.add('later', { n: 1 }, { id: 'a' }).then(() => true, () => false), 'an add to go through');
      await eventually(() => seen.length === 1, 'the run, once the worker has reconnected');
      expect(seen).toEqual([{ n: 1 }]);
      expect(available).toBe(1);

      // Redis goes away while a job runs: giving it back cannot be done, close() still ends.
      expect(await q.add('stuck', {}, { id: 'stuck' })).toBe(true);
      await eventually(() => stuck, 'the stuck run');
      server.kill('SIGKILL');
      await eventually(() => unavailable.length === 2, 'the second outage');
      expect(await within(q.close(200), 10_000)).toBe(true);
    } finally {
      server?.kill('SIGKILL');
    }
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}
