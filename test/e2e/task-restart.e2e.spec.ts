import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { formatUsd, parseUsd } from '../../src/money/usd';
import { startSimulator, type Simulator } from '../../src/simulator';
import { ChildGateway } from '../support/child-gateway';
import { mediaChannel, mediaModel } from '../media/task-support';

// The issue: "A test kills the gateway while tasks are in flight, starts it again, and finds every task
// finished or expired with its money settled or released and `ledger verify` clean."
//
// `gateway serve` runs in a child process, SIGKILLed while video tasks are in flight, then started again
// on the same DATA_DIR (embedded) or the same database and Redis (DATABASE_URL, REDIS_URL: the poll jobs
// wait in Redis). The upstream simulator runs here, so it outlives the gateway: its tasks advance one
// step per GET (`task_polls:k`), so while the gateway is dead they simply wait. Polls are 200 ms apart
// (TASK_POLL_INTERVAL_MS).
//
// Expiry is not here: a video task lives at least an hour (`execution_expires_after` is clamped to 1 h),
// and a child process runs on the real clock. test/media/task-recovery.int.spec.ts expires tasks past
// their deadline on a gateway's injectable clock, through a restart of an in-process gateway too.

const ADMIN_TOKEN = 'test-admin-token';
const PRICE = '0.10';
const GRANT = parseUsd('40.44');
const POLL_MS = 200;
const BULLMQ = Boolean(process.env.REDIS_URL);

interface Planned {
  readonly name: string;
  readonly body: Record<string, unknown>;
  readonly status: 'succeeded' | 'failed';
  /** Seconds delivered (billed at PRICE each, by the millisecond); 0 when refunded. */
  readonly seconds: number;
  /** Ends before the kill (the rest are still in flight then). */
  readonly early?: boolean;
}

const text = (t: string) => [{ type: 'text', text: t }];
const PLAN: readonly Planned[] = [
  { name: 'early', body: { content: text('done before the kill [[sim:task_polls:2]]') }, status: 'succeeded', seconds: 5, early: true },
  { name: 'four', body: { content: text('four seconds [[sim:task_polls:14]]'), duration: 4 }, status: 'succeeded', seconds: 4 },
  { name: 'six', body: { content: text('six seconds [[sim:task_polls:16,task_progress]]'), duration: 6 }, status: 'succeeded', seconds: 6 },
  { name: 'fraction', body: { content: text('4.2 seconds, no duration asked [[sim:task_polls:15,task_duration_ms:4200]]') }, status: 'succeeded', seconds: 4.2 },
  { name: 'soon', body: { content: text('ends right after the restart [[sim:task_polls:10]]'), duration: 3 }, status: 'succeeded', seconds: 3 },
  { name: 'failing', body: { content: text('fails upstream [[sim:task_polls:12,task_failed]]'), duration: 5 }, status: 'failed', seconds: 0 },
];

function config(sim: Simulator): GatewayConfig {
  return {
    models: [mediaModel({ id: 'vid', kind: 'video', price: { per_second: PRICE } })],
    channels: [mediaChannel(sim, 'vid-a', 'videos', ['vid'])],
  };
}

/** A Redis database of this file's own: every child gateway of the suite names its poll queue `task.poll`
 * under the default prefix, and a worker drops the job of a task its own database does not know. */
function ownRedisUrl(): string | undefined {
  if (!process.env.REDIS_URL) return undefined;
  const url = new URL(process.env.REDIS_URL);
  url.pathname = `/${1 + Math.floor(Math.random() * 15)}`;
  return url.toString();
}

describe('media tasks when the gateway is killed mid-flight', () => {
  let sim: Simulator;
  let gw: ChildGateway;
  const dir = mkdtempSync(join(tmpdir(), 'gateway-task-restart-'));
  const redisUrl = ownRedisUrl();

  beforeAll(async () => {
    sim = await startSimulator();
    const configPath = join(dir, 'config.yaml');
    writeFileSync(configPath, JSON.stringify(config(sim)));
    gw = await ChildGateway.prepare({
      env: { GATEWAY_CONFIG: configPath, ADMIN_TOKEN, TASK_POLL_INTERVAL_MS: String(POLL_MS), REDIS_URL: redisUrl ?? '' },
    });
  });

  afterAll(async () => {
    await gw?.cleanup();
    if (redisUrl) {
      // The queue's bookkeeping and the rate limiter's keys (jobs themselves are gone once done).
      const redis = new Redis(redisUrl);
      const keys = [...(await redis.keys('gw:jobs:*')), ...(await redis.keys('gw:rl:*'))];
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${gw.base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    expect(response.status, `${method} ${path}`).toBeLessThan(300);
    return (await response.json()) as Record<string, unknown>;
  };
  const poll = async (key: string, id: string) =>
    (await (await fetch(`${gw.base}/v1/videos/generations/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record<string, unknown>;
  const inFlight = (body: Record<string, unknown>) => body.status === 'queued' || body.status === 'running';

  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) expect.fail(`${what} did not happen within ${timeoutMs} ms\n${gw.output}`);
      await sleep(50);
    }
  }

  /**
   * SIGKILL. With BullMQ, at a moment no poll is running: a job whose worker dies mid-run is BullMQ's
   * stalled path (test/jobs covers it), which takes its lock's 30 s and up to two stalled checks to run
   * again: longer than this test. The process is paused (SIGSTOP) until Redis shows no job active.
   */
  async function kill() {
    try {
      if (BULLMQ) await pauseBetweenPolls();
    } finally {
      // Whatever happened: a paused server would never exit on the cleanup's SIGTERM.
      expect(await gw.terminate('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    }
  }

  async function pauseBetweenPolls() {
    const redis = new Redis(redisUrl!);
    try {
      for (let tries = 0; ; tries++) {
        process.kill(gw.pid!, 'SIGSTOP');
        if ((await redis.llen('gw:jobs:task.poll:active')) === 0) return;
        process.kill(gw.pid!, 'SIGCONT');
        if (tries > 200) expect.fail('a poll was running at every try');
        await sleep(7);
      }
    } finally {
      redis.disconnect();
    }
  }

  it('finishes every task after a restart, each settled on what it delivered or released in full, and ledger verify is clean', async () => {
    await gw.start();
    const account = await admin('POST', '/accounts', { name: 'restart' });
    const accountId = account.id as string;
    const key = (await admin('POST', `/accounts/${accountId}/keys`, { name: 'k' })).key as string;

    const ids = new Map<string, string>();
    for (const task of PLAN) {
      const response = await fetch(`${gw.base}/v1/videos/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'vid', ...task.body }),
      });
      const body = (await response.json()) as Record<string, unknown>;
      expect(response.status, JSON.stringify(body)).toBe(200);
      ids.set(task.name, body.id as string);
    }
    const reserved = PLAN.reduce((sum, t) => sum + parseUsd(PRICE) * BigInt((t.body.duration as number | undefined) ?? 12), 0n);

    // In flight: the early task has ended and is settled, every other one is running upstream.
    await until('the early task ends and the others run', async () => {
      const bodies = await Promise.all(PLAN.map((t) => poll(key, ids.get(t.name)!)));
      const wallet = await admin('GET', `/accounts/${accountId}`);
      return bodies.every((b, i) => (PLAN[i]!.early ? b.status === 'succeeded' : b.status === 'running')) && wallet.balance_usd === formatUsd(GRANT - parseUsd(PRICE) * 5n);
    });
    expect(parseUsd(String((await admin('GET', `/accounts/${accountId}`)).held_usd))).toBe(reserved - parseUsd(PRICE) * 12n);

    await kill();
    // The upstream tasks wait while nobody asks about them.
    const gets = sim.requests.filter((r) => r.method === 'GET').length;
    await sleep(4 * POLL_MS);
    expect(sim.requests.filter((r) => r.method === 'GET').length).toBe(gets);

    await gw.start();
    await until('every task ends', async () => (await Promise.all(PLAN.map((t) => poll(key, ids.get(t.name)!)))).every((b) => !inFlight(b)));

    let charged = 0n;
    for (const task of PLAN) {
      const body = await poll(key, ids.get(task.name)!);
      expect(body.status, task.name).toBe(task.status);
      if (task.status === 'succeeded') {
        expect(body.duration_sec, task.name).toBe(task.seconds);
        charged += (parseUsd(PRICE) * BigInt(Math.round(task.seconds * 1000))) / 1000n;
      } else expect(body.error, task.name).toMatchObject({ code: expect.any(String) });
    }
    const after = await admin('GET', `/accounts/${accountId}`);
    expect({ balance: after.balance_usd, held: after.held_usd }).toEqual({ balance: formatUsd(GRANT - charged), held: formatUsd(0n) });

    // One call-log row per task, at its charge.
    const logs = (await admin('GET', `/accounts/${accountId}/logs`)).data as Array<Record<string, unknown>>;
    expect(logs).toHaveLength(PLAN.length);
    for (const task of PLAN) {
      const rows = logs.filter((r) => r.task_id === ids.get(task.name));
      expect(rows, task.name).toHaveLength(1);
      const cost = task.status === 'succeeded' ? (parseUsd(PRICE) * BigInt(Math.round(task.seconds * 1000))) / 1000n : 0n;
      expect(rows[0], task.name).toMatchObject({ status: task.status === 'succeeded' ? 'success' : 'error', cost_usd: formatUsd(cost) });
    }

    // Embedded: the CLI opens the database once the server is down (PGlite is one process's).
    await gw.stop();
    const verify = await gw.run(['ledger', 'verify']);
    expect(verify.stdout + verify.stderr).toContain('ledger verified');
    expect(verify.code).toBe(0);
    expect(gw.output).not.toMatch(/uncaught|unhandled/i);
  });
});
