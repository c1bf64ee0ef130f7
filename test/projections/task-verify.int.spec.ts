import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { verifyLedger, type Difference } from '../../src/projections/verify';
import type { Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { apply, createTask } from '../media/task-fixtures';
import { api, mediaChannel, mediaModel, startTaskHarness } from '../media/task-support';

// `gateway ledger verify` over the task views: each task stream folded with the task decider against
// its `tasks` row, its cost and money against its hold's closing on the wallet.

function config(sim: Simulator): GatewayConfig {
  return { models: [mediaModel({ id: 'vid', kind: 'video', price: { per_second: '0.10' } })], channels: [mediaChannel(sim, 'vid-a', 'videos', ['vid'])] };
}

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startTaskHarness(config);
});
afterAll(() => h.close());

const text = (t: string) => [{ type: 'text', text: t }];
const ended = (b: Record<string, unknown>) => !['queued', 'running'].includes(String(b.status));

async function verify(accountId?: string): Promise<Difference[]> {
  const { gateway } = h.t;
  await gateway.ledger.idle();
  await gateway.tasks.idle();
  await gateway.runner.catchUpToHead();
  return verifyLedger(gateway.storage.store, h.t.db.sql, accountId ? { accountId } : {});
}

const onTasks = (differences: Difference[]) => differences.filter((d) => d.subject.startsWith('task '));

describe('ledger verify: task views', () => {
  const ids: Record<string, string> = {};
  let accountId = '';

  it('reports nothing on tasks that succeeded, failed, were refused or are in flight', async () => {
    const http = api(h);
    const a = await h.t.accountWithKey();
    accountId = a.accountId;
    const submit = async (content: string) => (await (await http.post('/v1/videos/generations', a.key, { model: 'vid', content: text(content) })).json()) as { id: string };
    // Refused by the upstream before anything else is in flight (a poll would take the scenario).
    h.sim.enqueueFor({ model: 'vid-upstream' }, 'http_400');
    expect((await http.post('/v1/videos/generations', a.key, { model: 'vid', content: text('refused') })).status).toBe(400);
    ids.ok = (await submit('a cube')).id;
    ids.failed = (await submit('x [[sim:task_failed]]')).id;
    // In flight for the whole file, and silent after its start (no progress): nothing is appended
    // between the views' catch-up and the comparison.
    ids.running = (await submit('slow [[sim:task_polls:100000]]')).id;
    await http.until(`/v1/videos/generations/${ids.ok}`, a.key, ended);
    await http.until(`/v1/videos/generations/${ids.failed}`, a.key, ended);
    await http.until(`/v1/videos/generations/${ids.running}`, a.key, (b) => b.status === 'running');
    const [refused] = await h.t.db.sql.query<{ task_id: string }>(`SELECT task_id FROM tasks WHERE account_id = $1 AND phase = 'refused'`, [accountId]);
    expect(refused).toBeDefined();
    ids.refused = refused!.task_id;

    expect(await verify()).toEqual([]);
  });

  it('reports a finished task whose hold is still open, until the hold is closed', async () => {
    const { gateway } = h.t;
    const a = await h.t.accountWithKey();
    const now = Math.floor(Date.now() / 1000);
    const task = await createTask(gateway, { accountId: a.accountId, keyId: a.keyId, now });
    await apply(gateway, task.taskId, { type: 'RecordSubmission', channelId: 'vid-a', upstreamTaskId: 'up-x', upstreamModel: 'vid-upstream', attempts: 1, now });
    // The process that decided the success died before it closed the hold.
    const state = await apply(gateway, task.taskId, { type: 'Succeed', result: {}, units: 3_000, unitCount: 3, resultUrls: [], resultExpiresAt: null, now });
    expect(await verify()).toEqual([
      { subject: `task ${task.taskId}`, field: 'hold', expected: 'closed (the task ended succeeded)', actual: 'open: finished task, hold still open' },
    ]);
    await gateway.tasks.closeMoney(state);
    expect(await verify()).toEqual([]);
  });

  it('reports a tampered row, a missing row and a row with no events; --account reports only its own', async () => {
    const { sql } = h.t.db;
    await sql.query(`UPDATE tasks SET status = 'running', charge = charge + 1 WHERE task_id = $1`, [ids.ok]);
    await sql.query(`UPDATE tasks SET cost = 7, money = 'settled' WHERE task_id = $1`, [ids.failed]);
    await sql.query(`UPDATE tasks SET visible = true, error_code = 'other' WHERE task_id = $1`, [ids.refused]);
    await sql.query(`UPDATE tasks SET result_urls = '["https://elsewhere/v.mp4"]'::jsonb, unit_count = 9 WHERE task_id = $1`, [ids.ok]);
    await sql.query(`DELETE FROM tasks WHERE task_id = $1`, [ids.running]);
    await sql.query(
      `INSERT INTO tasks SELECT '00000000-0000-4000-8000-000000000000', account_id, key_id, family, endpoint, model, phase, status, visible, created_at, updated_at,
              started_at, completed_at, deadline, progress, params, result, error_code, error_message, unit_count, reserved, charge, cost, money, request_id,
              hold_id, channel_id, upstream_task_id, upstream_model, result_urls, result_expires_at FROM tasks WHERE task_id = $1`,
      [ids.ok],
    );

    const ok = await h.t.gateway.tasks.state(ids.ok!);
    const refused = await h.t.gateway.tasks.state(ids.refused!);
    const line = (d: Difference) => `${d.subject.slice('task '.length)} ${d.field}: ${d.expected} / ${d.actual}`;
    const found = onTasks(await verify()).map(line);
    expect(found.sort()).toEqual(
      [
        `${ids.ok} status: "succeeded" / "running"`,
        `${ids.ok} charge: "500000000" / "500000001"`,
        `${ids.ok} unit_count: 5 / 9`,
        `${ids.ok} result_urls: ${JSON.stringify(ok.resultUrls)} / ["https://elsewhere/v.mp4"]`,
        `${ids.failed} money: "released" / "settled"`,
        `${ids.failed} cost: "0" / "7"`,
        `${ids.refused} visible: false / true`,
        `${ids.refused} error code: ${JSON.stringify(refused.error!.code)} / "other"`,
        `${ids.running} row: present / missing`,
        `00000000-0000-4000-8000-000000000000 row: absent (no events) / present`,
      ].sort(),
    );
    expect(ok.resultUrls).toHaveLength(1);

    // --account: that account's tasks only (the row with no events names the tampered account).
    expect((await verify(accountId)).map(line).sort()).toEqual(found);
    const other = await h.t.accountWithKey();
    expect(onTasks(await verify(other.accountId))).toEqual([]);
  });

  it('reports nothing once the views are rebuilt from the log', async () => {
    await h.t.gateway.runner.stop();
    await h.t.gateway.runner.rebuild('tasks');
    expect(await verify()).toEqual([]);
  });
});
