import { randomUUID } from 'node:crypto';
import type { TaskCommand, TaskState } from '../../src/commands/task/decider';
import type { TaskBilling, TaskFamily } from '../../src/events/catalog';
import { TASK_HOLD_GRACE_S } from '../../src/http/media/tasks/task-submit';
import type { Gateway } from '../../src/runtime/gateway';

/** 0.10 USD a second, counted by the millisecond (a per-second video SKU). */
export const TENTH_PER_SECOND: TaskBilling = { unit: 'millisecond', price: 100_000_000n, per: 1000, cap: false };

export interface DirectTask {
  readonly taskId: string;
  readonly holdId: string;
  readonly accountId: string;
  readonly reserved: bigint;
  readonly state: TaskState;
}

/**
 * What a submission does before it asks any upstream (`reserveAndCreate`): the hold, then the task
 * that owns it. Written straight through the gateway's ledger and task service, so that a test can
 * leave a task where a dead process would have left it.
 */
export async function createTask(
  gateway: Gateway,
  options: {
    accountId: string;
    keyId: string;
    now: number;
    family?: TaskFamily;
    model?: string;
    endpoint?: string;
    reserved?: bigint;
    billing?: TaskBilling;
    lifetimeS?: number;
    /** The hold's own time to live (default the task's lifetime plus the gateway's grace). */
    holdTtlS?: number;
    visible?: boolean;
  },
): Promise<DirectTask> {
  const family = options.family ?? 'video';
  const model = options.model ?? 'vid';
  const endpoint = options.endpoint ?? 'videos.generations';
  const reserved = options.reserved ?? 1_200_000_000n;
  const lifetimeS = options.lifetimeS ?? 7_200;
  const holdId = `req_${randomUUID().replaceAll('-', '')}`;
  const held = await gateway.ledger.reserve(options.accountId, {
    holdId,
    amount: reserved,
    keyId: options.keyId,
    purpose: `${endpoint} ${model}`,
    ttlSeconds: options.holdTtlS ?? lifetimeS + TASK_HOLD_GRACE_S,
    origin: { model, endpoint, requestId: holdId },
  });
  if (!held.ok) throw new Error(`the hold was refused: ${held.error.message}`);
  const taskId = randomUUID();
  const created = await gateway.tasks.handle(taskId, {
    type: 'CreateTask',
    taskId,
    family,
    accountId: options.accountId,
    keyId: options.keyId,
    model,
    endpoint,
    requestId: holdId,
    holdId,
    reserved,
    billing: options.billing ?? TENTH_PER_SECOND,
    basis: 12_000,
    params: {},
    visible: options.visible ?? family !== 'video',
    deadline: options.now + lifetimeS,
    now: options.now,
  });
  if (!created.ok) throw new Error(`the task was refused: ${created.error.message}`);
  return { taskId, holdId, accountId: options.accountId, reserved, state: created.state };
}

/** A command the task must accept (no hold closed: what a process that died right after it leaves). */
export async function apply(gateway: Gateway, taskId: string, command: TaskCommand): Promise<TaskState> {
  const handled = await gateway.tasks.handle(taskId, command);
  if (!handled.ok) throw new Error(`${command.type} refused: ${handled.error.message}`);
  return handled.state;
}

/** The task's view row, once the views caught up with everything this process wrote. */
export async function taskRow(gateway: Gateway, taskId: string): Promise<Record<string, unknown>> {
  await gateway.ledger.idle();
  await gateway.tasks.idle();
  await gateway.runner.catchUpToHead();
  const [row] = await gateway.storage.sql.query<Record<string, unknown>>(
    `SELECT task_id, phase, status, money, cost::text AS cost, charge::text AS charge, error_code, visible FROM tasks WHERE task_id = $1`,
    [taskId],
  );
  return row ?? {};
}
