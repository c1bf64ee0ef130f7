/**
 * Two runs of one task the gateway runs itself (an async image or speech task), at once, in two
 * processes: only one may go on to the upstream (issue 31, item 9). Each run claims the task on its
 * stream before its first upstream call; the claim is an append at the revision the run read, so of two
 * claims decided at the same time the store keeps one and the other, decided again, is refused. Two
 * TaskServices on one store stand for two gateway instances (their own caches, their own handlers).
 * On PGlite, or on Postgres when DATABASE_URL is set.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskService } from '../../src/commands/task/service';
import { parseUsd } from '../../src/money/usd';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

describe('the claim of a task run', () => {
  it('of two runs claiming one task at once in two instances, exactly one gets it; the other stops before any upstream call', async () => {
    const { accountId, keyId } = await t.accountWithKey();
    const ledger = t.gateway.ledger;
    const now = Math.floor(Date.now() / 1000);
    const amount = parseUsd('0.04');
    for (let round = 0; round < 5; round++) {
      const holdId = randomUUID();
      expect((await ledger.reserve(accountId, { holdId, amount, keyId, purpose: 'images.generations img', ttlSeconds: 600 })).ok).toBe(true);
      const taskId = randomUUID();
      const created = await t.gateway.tasks.handle(taskId, {
        type: 'CreateTask',
        taskId,
        family: 'image',
        accountId,
        keyId,
        model: 'img',
        endpoint: 'images.generations',
        requestId: `req_${round}`,
        holdId,
        reserved: amount,
        billing: { unit: 'image', price: amount, per: 1, cap: true },
        basis: 1,
        params: {},
        visible: true,
        deadline: now + 280,
        now,
      });
      expect(created.ok).toBe(true);

      const instances = [new TaskService(t.gateway.storage.store, ledger), new TaskService(t.gateway.storage.store, ledger)];
      // Both have read the task as created: their claims are decided on the same revision.
      await Promise.all(instances.map((tasks) => tasks.state(taskId)));
      const claims = await Promise.all(instances.map((tasks) => tasks.handle(taskId, { type: 'Claim', now })));
      expect(claims.filter((c) => c.ok)).toHaveLength(1);
      expect(claims.find((c) => !c.ok)).toMatchObject({ ok: false, error: { code: 'task_claimed' } });
      // A run that starts later (a restart's pickup, a redelivered job) is refused too.
      expect(await t.gateway.tasks.handle(taskId, { type: 'Claim', now })).toMatchObject({ ok: false, error: { code: 'task_claimed' } });
      const events = await t.gateway.storage.store.readStream(`task-${taskId}`);
      expect(events.filter((e) => e.type === 'TaskStarted')).toHaveLength(1);

      await t.gateway.tasks.finish(taskId, { type: 'Fail', outcome: 'failed', error: { code: 'internal_error', message: 'test' }, now });
    }
    await t.gateway.ledger.idle();
    expect((await ledger.wallet(accountId)).held).toBe(0n);
  });
});
