import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredHolds } from '../../src/jobs/hold-sweeper';
import type { GatewayConfig } from '../../src/config/schema';
import { InProcessJobQueue } from '../../src/jobs';
import { parseUsd } from '../../src/money/usd';
import { verifyLedger } from '../../src/projections/verify';
import { TaskWorkflows } from '../../src/tasks/workflows';
import { startSimulator, type Simulator } from '../../src/simulator';
import type { SimulatedGateway, TestGateway } from '../support/gateway';
import { startTestGateway } from '../support/gateway';
import { testDatabase, type TestDatabase } from '../support/storage';
import { apply, createTask, taskRow } from './task-fixtures';
import { api, FAST_TASKS, mediaChannel, mediaModel, startTaskHarness } from './task-support';

// The recovery paths of TaskWorkflows: what a start, the sweep and the poller do with tasks a dead
// process left behind. Tasks are left where a crash leaves them by writing their events straight
// through the gateway's task service; time moves on the gateway's injectable clock.

function config(sim: Simulator): GatewayConfig {
  return {
    models: [
      mediaModel({ id: 'vid', kind: 'video', price: { per_second: '0.10' } }),
      mediaModel({ id: 'img', kind: 'image', price: { per_image: '0.04' } }),
    ],
    channels: [mediaChannel(sim, 'vid-a', 'videos', ['vid'])],
  };
}

const GRANT = parseUsd('40.44');
const SUBMIT_GRACE_S = FAST_TASKS.taskPoller!.submitGraceS!;
/** Far apart: the test runs the sweep itself, at the moments it chooses. */
const NO_SWEEP_MS = 1_000_000_000;
const silent = { info() {}, warn() {}, error() {} };

let offset = 0;
const now = () => Math.floor(Date.now() / 1000) + offset;

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startTaskHarness(config, { now, taskSweepEveryMs: NO_SWEEP_MS });
});
afterAll(() => h.close());

// A task row's phase and its money come from two events (the task's end, the wallet's HoldReleased or
// settlement) that the projection may apply in separate batches: wait for both before asserting the row.
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) expect.fail(`${what} never happened; last: ${JSON.stringify(value)}`);
    await sleep(25);
  }
}

async function callRows(t: TestGateway, accountId: string) {
  await t.gateway.ledger.idle();
  await t.gateway.runner.catchUpToHead();
  return t.db.sql.query<{ task_id: string | null; status: string; error_code: string | null; cost: string; unit_count: number | null }>(
    `SELECT task_id, status, error_code, cost::text AS cost, unit_count FROM call_log WHERE account_id = $1 ORDER BY created_at`,
    [accountId],
  );
}

/** An upstream task the simulator knows, made without the gateway (the gateway that submitted it died). */
async function upstreamTask(sim: Simulator, text: string): Promise<string> {
  const response = await fetch(`${sim.url}/vid-a/api/v3/contents/generations/tasks`, {
    method: 'POST',
    headers: { authorization: 'Bearer key-vid-a', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'vid-upstream', content: [{ type: 'text', text }] }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
}

const deletes = (sim: Simulator, upstreamId: string) => sim.requests.filter((r) => r.method === 'DELETE' && r.path.endsWith(`/tasks/${upstreamId}`));

describe('TaskWorkflows recovery', () => {
  it('fails and refunds a task created but never accepted (its submitting process died), once the submit grace has passed', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const task = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now() });
    // What a start does: every task in flight is followed again.
    await gateway.workflows.recover();
    await sleep(300);
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'created', money: 'held' });
    expect((await gateway.ledger.wallet(a.accountId)).held).toBe(task.reserved);

    offset += SUBMIT_GRACE_S + 1;
    const row = await until(() => taskRow(gateway, task.taskId), (r) => r.phase !== 'created' && r.money !== 'held', 'the submission failure');
    expect(row).toMatchObject({ phase: 'failed', status: 'failed', error_code: 'submission_interrupted', money: 'released', cost: '0', visible: false });
    const wallet = await gateway.ledger.wallet(a.accountId);
    expect([wallet.balance, wallet.held]).toEqual([GRANT, 0n]);
    expect(await callRows(h.t, a.accountId)).toEqual([{ task_id: task.taskId, status: 'error', error_code: 'submission_interrupted', cost: '0', unit_count: 0 }]);
  });

  it('adopts an accepted upstream task that no poll job follows (its queueing failed), and only one the log still has in flight', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const at = now();
    const upstreamId = await upstreamTask(h.sim, 'nobody follows me [[sim:task_polls:2]]');
    const task = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: at });
    await apply(gateway, task.taskId, { type: 'RecordSubmission', channelId: 'vid-a', upstreamTaskId: upstreamId, upstreamModel: 'vid-upstream', attempts: 1, now: at });
    // Ended in the log, not yet in the view: adoption must not give it a job.
    const ended = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: at });
    await apply(gateway, ended.taskId, { type: 'RecordSubmission', channelId: 'vid-a', upstreamTaskId: 'cgt-ended', upstreamModel: 'vid-upstream', attempts: 1, now: at });
    await gateway.runner.catchUpToHead();
    await apply(gateway, ended.taskId, { type: 'Fail', outcome: 'failed', error: { code: 'x', message: 'x' }, now: at });
    await gateway.workflows.adopt();
    const row = await until(() => taskRow(gateway, task.taskId), (r) => r.phase === 'succeeded' && r.money === 'settled', 'the adopted task to end');
    expect(row).toMatchObject({ status: 'succeeded', money: 'settled' });
    expect(h.sim.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/tasks/cgt-ended'))).toHaveLength(0);
    await gateway.tasks.finish(ended.taskId, { type: 'Expire', now: at + 7_200 });
  });

  it('closes the hold a crash left open on a finished task, with exactly its charge, after a minute of slack; once', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const at = now();
    const task = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: at });
    await apply(gateway, task.taskId, { type: 'RecordSubmission', channelId: 'vid-a', upstreamTaskId: 'cgt-gone', upstreamModel: 'vid-upstream', attempts: 1, now: at });
    // The success is in the log; the process died before the settlement.
    const state = await apply(gateway, task.taskId, { type: 'Succeed', result: { duration: 4.2 }, units: 4_200, unitCount: 4, resultUrls: ['https://cdn.example/v.mp4'], resultExpiresAt: null, now: at });
    expect(state.charge).toBe(parseUsd('0.42'));

    // The process that ended it may be closing it right now: the sweep leaves it a minute.
    await gateway.workflows.sweep();
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'succeeded', money: 'held' });
    expect((await gateway.ledger.wallet(a.accountId)).holds.has(task.holdId)).toBe(true);

    offset += 61;
    await gateway.workflows.sweep();
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'succeeded', money: 'settled', cost: String(parseUsd('0.42')), charge: String(parseUsd('0.42')) });
    const wallet = await gateway.ledger.wallet(a.accountId);
    expect([wallet.balance, wallet.held, wallet.captured]).toEqual([GRANT - parseUsd('0.42'), 0n, parseUsd('0.42')]);
    expect(await callRows(h.t, a.accountId)).toEqual([{ task_id: task.taskId, status: 'success', error_code: null, cost: String(parseUsd('0.42')), unit_count: 4 }]);

    // Swept again (another instance, the next tick): nothing more.
    await gateway.workflows.sweep();
    expect((await gateway.ledger.wallet(a.accountId)).balance).toBe(GRANT - parseUsd('0.42'));
    expect(await callRows(h.t, a.accountId)).toHaveLength(1);
  });

  it('expires and refunds a task past its deadline that nothing follows, and asks the upstream to cancel it', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const upstreamId = await upstreamTask(h.sim, 'forever [[sim:task_polls:100000]]');
    const task = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now(), lifetimeS: 3_600 });
    await apply(gateway, task.taskId, { type: 'RecordSubmission', channelId: 'vid-a', upstreamTaskId: upstreamId, upstreamModel: 'vid-upstream', attempts: 1, now: now() });

    await gateway.workflows.sweep();
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'queued' });
    expect(deletes(h.sim, upstreamId)).toHaveLength(0);

    offset += 3_600;
    await gateway.workflows.sweep();
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'expired', status: 'expired', error_code: 'task_expired', money: 'released', cost: '0' });
    expect(deletes(h.sim, upstreamId)).toHaveLength(1);
    const upstream = (await (await fetch(`${h.sim.url}/vid-a/api/v3/contents/generations/tasks/${upstreamId}`, { headers: { authorization: 'Bearer k' } })).json()) as { status: string };
    expect(upstream.status).toBe('cancelled');
    const wallet = await gateway.ledger.wallet(a.accountId);
    expect([wallet.balance, wallet.held]).toEqual([GRANT, 0n]);
    expect(await callRows(h.t, a.accountId)).toEqual([{ task_id: task.taskId, status: 'error', error_code: 'task_expired', cost: '0', unit_count: 0 }]);
  });

  it('never asks the upstream to cancel a task that ended otherwise, even when the views still show it in flight past its deadline', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const upstreamId = await upstreamTask(h.sim, 'done upstream [[sim:task_polls:1]]');
    const task = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now(), lifetimeS: 3_600 });
    await apply(gateway, task.taskId, { type: 'RecordSubmission', channelId: 'vid-a', upstreamTaskId: upstreamId, upstreamModel: 'vid-upstream', attempts: 1, now: now() });
    await gateway.runner.catchUpToHead();

    // The views fall behind (a busy database, another instance's lag) while the task succeeds.
    await gateway.runner.stop();
    try {
      const succeeded = await gateway.tasks.finish(task.taskId, { type: 'Succeed', result: {}, units: 5_000, unitCount: 5, resultUrls: [], resultExpiresAt: null, now: now() });
      expect(succeeded.ok).toBe(true);
      offset += 3_600;
      await gateway.workflows.sweep();
    } finally {
      gateway.runner.start(() => {});
    }
    // An upstream may delete a finished task's record on a DELETE: the sweep must not send one.
    expect(deletes(h.sim, upstreamId)).toHaveLength(0);
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'succeeded', money: 'settled', cost: String(parseUsd('0.50')) });
  });

  it('expires a task its own poller finds past the deadline: refunded, the upstream asked to cancel it', async () => {
    const { gateway } = h.t;
    const http = api(h);
    const a = await h.t.accountWithKey();
    const submitted = (await (await http.post('/v1/videos/generations', a.key, { model: 'vid', content: [{ type: 'text', text: 'long [[sim:task_polls:100000]]' }] })).json()) as { id: string };
    await http.until(`/v1/videos/generations/${submitted.id}`, a.key, (b) => b.status === 'running');
    const upstreamId = (await gateway.tasks.state(submitted.id)).upstream!.taskId;

    offset += 7_200;
    const done = await http.until(`/v1/videos/generations/${submitted.id}`, a.key, (b) => b.status !== 'running');
    expect(done).toMatchObject({ status: 'expired', error: { code: 'task_expired' } });
    await until(async () => deletes(h.sim, upstreamId).length, (n) => n === 1, 'the upstream DELETE');
    const wallet = await gateway.ledger.wallet(a.accountId);
    expect([wallet.balance, wallet.held]).toEqual([GRANT, 0n]);
  });

  it('fails at once the tasks the gateway ran itself when it is the only instance (embedded), and leaves them to their deadline otherwise', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const image = (await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now(), family: 'image', model: 'img', endpoint: 'images.generations', lifetimeS: 280 })).taskId;
    const speech = (await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now(), family: 'speech', model: 'img', endpoint: 'audio.speech', lifetimeS: 280 })).taskId;

    // Several instances (this gateway: a database of its own is not a locked DATA_DIR): another may be running them.
    await gateway.workflows.recover();
    expect(await taskRow(gateway, image)).toMatchObject({ phase: 'created', status: 'queued', money: 'held' });
    expect(await taskRow(gateway, speech)).toMatchObject({ phase: 'created', status: 'pending', money: 'held' });

    // Embedded: nothing else can be running them, so the last stop interrupted them (a process started since).
    offset += 1;
    const jobs = new InProcessJobQueue();
    const sole = new TaskWorkflows({
      tasks: gateway.tasks,
      queries: gateway.taskQueries,
      jobs,
      channel: () => undefined,
      now,
      log: silent,
      viewsCurrent: () => gateway.runner.catchUpToHead(),
      soleInstance: true,
    });
    // A task this process created since it started is its own run's, even while the recovery runs.
    const own = (await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now(), family: 'image', model: 'img', endpoint: 'images.generations', lifetimeS: 280 })).taskId;
    await sole.recover();
    await jobs.close(0);
    expect(await taskRow(gateway, own)).toMatchObject({ phase: 'created', money: 'held' });
    expect(await taskRow(gateway, image)).toMatchObject({ phase: 'failed', status: 'failed', error_code: 'gateway_interrupted', money: 'released', cost: '0' });
    expect(await taskRow(gateway, speech)).toMatchObject({ phase: 'failed', status: 'failed', error_code: 'gateway_interrupted', money: 'released' });
    const wallet = await gateway.ledger.wallet(a.accountId);
    expect(wallet.balance).toBe(GRANT);
    await gateway.tasks.finish(own, { type: 'Fail', outcome: 'failed', error: { code: 'x', message: 'x' }, now: now() });
    expect((await gateway.ledger.wallet(a.accountId)).held).toBe(0n);
  });

  it('expires at its deadline a task the gateway ran itself when other instances may be running it', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const image = (await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now(), family: 'image', model: 'img', endpoint: 'images.generations', lifetimeS: 280 })).taskId;
    await gateway.workflows.recover();
    await gateway.workflows.sweep();
    expect(await taskRow(gateway, image)).toMatchObject({ phase: 'created' });

    offset += 280;
    await gateway.workflows.sweep();
    // An image task past its time is `failed` to the client (its spec has no other ending).
    expect(await taskRow(gateway, image)).toMatchObject({ phase: 'expired', status: 'failed', error_code: 'task_expired', money: 'released', cost: '0' });
    expect((await gateway.ledger.wallet(a.accountId)).held).toBe(0n);
  });

  it('shows a task whose hold the hold sweeper released first as released at cost 0, and never charges its later success', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const task = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now: now(), holdTtlS: 5 });
    await apply(gateway, task.taskId, { type: 'RecordSubmission', channelId: 'vid-a', upstreamTaskId: 'cgt-late', upstreamModel: 'vid-upstream', attempts: 1, now: now() });

    offset += 5;
    await gateway.runner.catchUpToHead();
    expect(await sweepExpiredHolds(h.t.db.sql, gateway.ledger, now())).toBe(1);
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'queued', money: 'released', cost: '0' });

    const late = await gateway.tasks.finish(task.taskId, { type: 'Succeed', result: {}, units: 5_000, unitCount: 5, resultUrls: [], resultExpiresAt: null, now: now() });
    expect(late.ok).toBe(true);
    expect(await taskRow(gateway, task.taskId)).toMatchObject({ phase: 'succeeded', status: 'succeeded', charge: String(parseUsd('0.50')), money: 'released', cost: '0' });
    const wallet = await gateway.ledger.wallet(a.accountId);
    expect([wallet.balance, wallet.held, wallet.captured]).toEqual([GRANT, 0n, 0n]);
    // The hold's one row is the sweeper's (the call died with its gateway, as far as the wallet knew).
    expect(await callRows(h.t, a.accountId)).toEqual([{ task_id: null, status: 'error', error_code: 'gateway_interrupted', cost: '0', unit_count: null }]);
    expect((await verifyLedger(gateway.storage.store, h.t.db.sql, { accountId: a.accountId })).filter((d) => d.subject === `task ${task.taskId}`)).toEqual([]);
  });
});

describe('a restart past a task deadline (in process: the same database, a later clock)', () => {
  let sim: Simulator;
  let db: TestDatabase;
  let skew = 0;
  const clock = () => Math.floor(Date.now() / 1000) + skew;
  // With REDIS_URL the jobs are BullMQ's under one prefix: the second gateway finds the first one's.
  const redis = process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL, rateLimits: { keyPrefix: `gwtest:rl:${randomBytes(4).toString('hex')}:` } } : {};
  const options = { ...FAST_TASKS, ...redis, jobsPrefix: `gwtest:${randomBytes(4).toString('hex')}`, now: clock, db: undefined as unknown as TestDatabase };
  beforeAll(async () => {
    sim = await startSimulator();
    db = await testDatabase();
    options.db = db;
  });
  afterAll(async () => {
    await db.drop();
    await sim.close();
  });

  it('expires the task at the next start, refunds it and asks the upstream to cancel it; ledger verify is clean', async () => {
    const first = await startTestGateway({ ...options, config: config(sim) });
    const a = await first.accountWithKey();
    const submit = await first.gateway.app.inject({
      method: 'POST',
      url: '/v1/videos/generations',
      headers: { authorization: `Bearer ${a.key}` },
      payload: { model: 'vid', content: [{ type: 'text', text: 'long [[sim:task_polls:100000]]' }] },
    });
    expect(submit.statusCode).toBe(200);
    const taskId = submit.json().id as string;
    await until(() => taskRow(first.gateway, taskId), (r) => r.phase === 'running', 'the start upstream');
    const upstreamId = (await first.gateway.tasks.state(taskId)).upstream!.taskId;
    await first.close();

    skew = 7_200;
    const second = await startTestGateway({ ...options, config: config(sim) });
    try {
      await second.gateway.workflows.recovered();
      const row = await until(() => taskRow(second.gateway, taskId), (r) => r.phase !== 'running' && r.money !== 'held', 'the expiry');
      expect(row).toMatchObject({ phase: 'expired', status: 'expired', error_code: 'task_expired', money: 'released', cost: '0' });
      await until(async () => deletes(sim, upstreamId).length, (n) => n >= 1, 'the upstream DELETE');
      const wallet = await second.gateway.ledger.wallet(a.accountId);
      expect([wallet.balance, wallet.held]).toEqual([GRANT, 0n]);
      expect(await callRows(second, a.accountId)).toEqual([{ task_id: taskId, status: 'error', error_code: 'task_expired', cost: '0', unit_count: 0 }]);
      expect(await verifyLedger(second.gateway.storage.store, db.sql)).toEqual([]);
    } finally {
      await second.close();
    }
  });
});
