import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { TASK_FAMILIES } from '../../src/events/catalog';
import { InProcessJobQueue } from '../../src/jobs';
import { GatewayMetrics } from '../../src/metrics/metrics';
import type { Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { Scrape } from '../support/prometheus';
import { api, mediaChannel, mediaModel, startTaskHarness } from '../media/task-support';

function config(sim: Simulator): GatewayConfig {
  return { models: [mediaModel({ id: 'vid', kind: 'video', price: { per_second: '0.10' } })], channels: [mediaChannel(sim, 'vid-a', 'videos', ['vid'])] };
}

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startTaskHarness(config);
});
afterAll(() => h.close());

async function scrape(): Promise<Scrape> {
  const response = await fetch(`${h.baseUrl}/metrics`);
  expect(response.status).toBe(200);
  return new Scrape(await response.text());
}

const poll = (outcome: string) => ({ job: 'task.poll', outcome });
const ended = (b: Record<string, unknown>) => !['queued', 'running'].includes(String(b.status));

describe('GET /metrics: background jobs and tasks in flight', () => {
  it('counts every poll run by outcome with its duration, and the tasks in flight per family', async () => {
    const http = api(h);
    const { key } = await h.t.accountWithKey();
    const submit = async (text: string) =>
      ((await (await http.post('/v1/videos/generations', key, { model: 'vid', content: [{ type: 'text', text }] })).json()) as { id: string }).id;
    const quick = await submit('quick [[sim:task_polls:3]]');
    const slow = await submit('slow [[sim:task_polls:40]]');
    await http.until(`/v1/videos/generations/${quick}`, key, ended);
    await http.until(`/v1/videos/generations/${slow}`, key, (b) => b.status === 'running');

    const during = await scrape();
    for (const family of TASK_FAMILIES) expect(during.value('gateway_tasks_in_flight', { family }), family).toBe(family === 'video' ? 1 : 0);
    expect(during.value('gateway_jobs_total', poll('done'))).toBe(1);
    expect(during.value('gateway_jobs_total', poll('again'))).toBeGreaterThanOrEqual(3);
    expect(during.value('gateway_jobs_total', poll('retry'))).toBe(0);
    expect(during.value('gateway_jobs_total', poll('dropped'))).toBe(0);

    await http.until(`/v1/videos/generations/${slow}`, key, ended);
    await sleep(1_100); // scrape-time reads are reused for a second
    const after = await scrape();
    expect(after.value('gateway_tasks_in_flight', { family: 'video' })).toBe(0);
    expect(after.value('gateway_jobs_total', poll('done'))).toBe(2);
    // One poll per GET the simulator answered, each once in the histogram.
    const runs = after.all('gateway_jobs_total').reduce((n, s) => n + s.value, 0);
    const gets = h.sim.requests.filter((r) => r.method === 'GET').length;
    expect(runs).toBe(gets);
    expect(after.value('gateway_job_run_seconds_count', { job: 'task.poll' })).toBe(runs);
    expect(after.value('gateway_job_run_seconds_sum', { job: 'task.poll' })).toBeGreaterThan(0);
    expect(after.value('gateway_job_run_seconds_bucket', { job: 'task.poll', le: '+Inf' })).toBe(runs);
  });
});

describe('GatewayMetrics.jobRun through a job queue', () => {
  it('counts retries and drops, every outcome shown from the first run', async () => {
    const metrics = new GatewayMetrics();
    const jobs = new InProcessJobQueue({ maxAttempts: 2, backoffMs: { first: 1, max: 1 }, onRun: (name, outcome, ms) => metrics.jobRun(name, outcome, ms) });
    const ran: string[] = [];
    jobs.handle<{ fail: number }>('test.flaky', async (data, { attempt }) => {
      ran.push(`${data.fail}:${attempt}`);
      if (attempt <= data.fail) throw new Error('upstream said no');
      return { done: true };
    });
    await jobs.start();
    await jobs.add('test.flaky', { fail: 1 }, { id: 'once' });
    await jobs.add('test.flaky', { fail: 5 }, { id: 'always' });
    for (let i = 0; i < 200 && ran.length < 4; i++) await sleep(5);
    await jobs.close(0);

    const m = new Scrape(await metrics.render());
    const of = (outcome: string) => m.value('gateway_jobs_total', { job: 'test.flaky', outcome });
    expect([of('done'), of('again'), of('retry'), of('dropped')]).toEqual([1, 0, 2, 1]);
    expect(m.value('gateway_job_run_seconds_count', { job: 'test.flaky' })).toBe(4);
    expect(m.has('gateway_tasks_in_flight')).toBe(false);
  });
});
