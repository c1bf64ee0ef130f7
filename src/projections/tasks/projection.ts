import type { DomainEvent } from '../../events/catalog';
import type { RecordedEvent } from '../../events/store/port';
import { FAMILIES } from '../../commands/task/families';
import type { SqlQuery } from '../../storage/sql';
import type { Projection } from '../projection';

/**
 * The task views: one row per media task, answering polls and lists with the spec's fields. Built
 * from the task streams, and from the wallet events that close a task's hold (their call record
 * names the task): `cost` is what the wallet captured, never what the task stream meant to charge,
 * so a hold that the sweeper released shows 0. `status` is the family's own word for the phase.
 */
export const tasksProjection: Projection = {
  name: 'tasks',
  streams: ['task-', 'wallet-'],
  tables: ['tasks'],
  schema: `
CREATE TABLE IF NOT EXISTS tasks (
  task_id text PRIMARY KEY,
  account_id text NOT NULL,
  key_id text,
  family text NOT NULL,
  endpoint text NOT NULL,
  model text NOT NULL,
  phase text NOT NULL,
  status text NOT NULL,
  visible boolean NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  started_at bigint,
  completed_at bigint,
  deadline bigint NOT NULL,
  progress integer,
  params jsonb NOT NULL,
  result jsonb,
  error_code text,
  error_message text,
  unit_count integer,
  reserved bigint NOT NULL,
  charge bigint NOT NULL DEFAULT 0,
  cost bigint NOT NULL DEFAULT 0,
  money text NOT NULL DEFAULT 'held',
  request_id text NOT NULL,
  hold_id text NOT NULL,
  channel_id text,
  upstream_task_id text,
  upstream_model text,
  result_urls jsonb NOT NULL DEFAULT '[]',
  result_expires_at bigint
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (account_id, family, created_at DESC, task_id DESC) WHERE visible;
CREATE INDEX IF NOT EXISTS tasks_by_hold ON tasks (account_id, hold_id);
CREATE INDEX IF NOT EXISTS tasks_in_flight ON tasks (deadline) WHERE phase IN ('created', 'queued', 'running');
CREATE INDEX IF NOT EXISTS tasks_unclosed ON tasks (completed_at) WHERE money = 'held' AND phase NOT IN ('created', 'queued', 'running');`,

  // Task events one by one (a task has a handful); the closings of task holds, which follow the wallet
  // streams' hot traffic, in one statement per batch after them (a task's row exists before its hold
  // closes, and no task event writes `money` or `cost`).
  async applyBatch(tx, items) {
    const closings: Closing[] = [];
    for (const { event, recorded } of items) {
      if (recorded.streamId.startsWith('wallet-')) {
        const closing = closingOf(event, recorded.streamId.slice('wallet-'.length));
        if (closing) closings.push(closing);
      } else await apply(tx, event, recorded);
    }
    if (closings.length > 0) await applyClosings(tx, closings);
  },
};

async function apply(tx: SqlQuery, event: DomainEvent, recorded: RecordedEvent): Promise<void> {
  const taskId = recorded.streamId.slice('task-'.length);
  switch (event.type) {
    case 'TaskCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO tasks (task_id, account_id, key_id, family, endpoint, model, phase, status, visible, created_at, updated_at,
                            deadline, params, reserved, request_id, hold_id)
         VALUES ($1, $2, $3, $4, $5, $6, 'created', $7, $8, $9, $9, $10, $11::jsonb, $12::bigint, $13, $14)
         ON CONFLICT (task_id) DO NOTHING`,
        [taskId, d.account_id, d.key_id, d.family, d.endpoint, d.model, FAMILIES[d.family].statusOf('created'), d.visible, d.at, d.deadline, JSON.stringify(d.params), String(d.reserved), d.request_id, d.hold_id],
      );
      return;
    }
    case 'TaskSubmitted':
      await tx.query(
        `UPDATE tasks SET phase = 'queued', status = $2, visible = true, channel_id = $3, upstream_task_id = $4, upstream_model = $5 WHERE task_id = $1`,
        [taskId, await statusOf(tx, taskId, 'queued'), event.data.channel_id, event.data.upstream_task_id, event.data.upstream_model],
      );
      return;
    case 'TaskSubmissionRefused':
      await tx.query(
        `UPDATE tasks SET phase = 'refused', status = $2, error_code = $3, error_message = $4, completed_at = $5, updated_at = $5 WHERE task_id = $1`,
        [taskId, await statusOf(tx, taskId, 'refused'), event.data.error.code, event.data.error.message, event.data.at],
      );
      return;
    case 'TaskStarted':
      await tx.query(`UPDATE tasks SET phase = 'running', status = $2, started_at = $3 WHERE task_id = $1`, [taskId, await statusOf(tx, taskId, 'running'), event.data.at]);
      return;
    case 'TaskProgressed':
      await tx.query(`UPDATE tasks SET progress = $2 WHERE task_id = $1`, [taskId, event.data.progress]);
      return;
    case 'TaskSucceeded': {
      const d = event.data;
      await tx.query(
        `UPDATE tasks SET phase = 'succeeded', status = $2, result = $3::jsonb, unit_count = $4, charge = $5::bigint, result_urls = $6::jsonb,
                          result_expires_at = $7, completed_at = $8, updated_at = $8, progress = NULL, started_at = COALESCE(started_at, $8)
          WHERE task_id = $1`,
        [taskId, await statusOf(tx, taskId, 'succeeded'), JSON.stringify(d.result), d.unit_count, String(d.charge), JSON.stringify(d.result_urls), d.result_expires_at, d.at],
      );
      return;
    }
    case 'TaskFailed': {
      const d = event.data;
      await tx.query(
        `UPDATE tasks SET phase = $2, status = $3, error_code = $4, error_message = $5, result = $6::jsonb, completed_at = $7, updated_at = $7, progress = NULL
          WHERE task_id = $1`,
        [taskId, d.outcome, await statusOf(tx, taskId, d.outcome), d.error.code, d.error.message, d.result ? JSON.stringify(d.result) : null, d.at],
      );
      return;
    }
    case 'TaskDeleted':
      await tx.query(`UPDATE tasks SET visible = false WHERE task_id = $1`, [taskId]);
      return;
    default:
      return;
  }
}

/** The family's word for a phase: the family is on the row (the task's first event created it). */
async function statusOf(tx: SqlQuery, taskId: string, phase: Parameters<(typeof FAMILIES)['video']['statusOf']>[0]): Promise<string> {
  const rows = await tx.query<{ family: keyof typeof FAMILIES }>(`SELECT family FROM tasks WHERE task_id = $1`, [taskId]);
  const family = rows[0]?.family;
  return family ? FAMILIES[family].statusOf(phase) : phase;
}

/** A task's hold closed on its wallet: what was captured (0 on a release). */
interface Closing {
  /** The task's own closing names it in its call record; the hold sweeper's release does not. */
  readonly task_id: string | null;
  readonly account_id: string;
  readonly hold_id: string;
  readonly money: 'settled' | 'released';
  readonly cost: string;
}

/** The closing of a task's hold, if the event is one: the task's own (its call record names the task),
 * or the hold sweeper's release of a hold whose task's process died (matched by the hold). Chat calls'
 * closings are neither. */
function closingOf(event: DomainEvent, accountId: string): Closing | null {
  if (event.type !== 'HoldSettled' && event.type !== 'HoldReleased') return null;
  const taskId = event.data.call?.task_id ?? null;
  if (taskId === null && !(event.type === 'HoldReleased' && event.data.reason === 'expired')) return null;
  const settled = event.type === 'HoldSettled';
  return { task_id: taskId, account_id: accountId, hold_id: event.data.hold_id, money: settled ? 'settled' : 'released', cost: settled ? String(event.data.captured) : '0' };
}

async function applyClosings(tx: SqlQuery, closings: readonly Closing[]): Promise<void> {
  await tx.query(
    `UPDATE tasks AS t SET money = c.money, cost = c.cost
       FROM json_to_recordset($1::json) AS c(task_id text, account_id text, hold_id text, money text, cost bigint)
      WHERE t.account_id = c.account_id AND t.hold_id = c.hold_id AND (c.task_id IS NULL OR t.task_id = c.task_id)
        AND (c.task_id IS NOT NULL OR t.money = 'held')`,
    [JSON.stringify(closings)],
  );
}
