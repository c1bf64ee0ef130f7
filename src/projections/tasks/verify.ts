import { evolve, initialTaskState, isFinished, type TaskState } from '../../commands/task/decider';
import { FAMILIES } from '../../commands/task/families';
import type { TaskEvent, WalletEvent } from '../../events/catalog';
import type { Sql } from '../../storage/sql';

/** How a hold ended on its wallet, as the task views must show it (none: still open). */
type Closing = { readonly money: 'settled'; readonly cost: bigint } | { readonly money: 'released'; readonly cost: 0n };

/** A difference when the two values differ (as JSON). */
export type Compare = (subject: string, field: string, expected: unknown, actual: unknown) => void;
/** A difference, always. */
export type Report = (subject: string, field: string, expected: string, actual: string) => void;

/**
 * The task side of `gateway ledger verify`: every task stream folded with the task decider, and every
 * hold's closing as its wallet has it, compared with the `tasks` table. A task's `cost` and `money` are
 * checked against the wallet, never against the task stream: whoever closed the hold (the task, or the
 * hold sweeper before it) decided them.
 */
export class TaskCheck {
  private readonly tasks = new Map<string, TaskState>();
  private readonly closings = new Map<string, Closing>();

  taskEvent(streamId: string, event: TaskEvent): void {
    const id = streamId.slice('task-'.length);
    this.tasks.set(id, evolve(this.tasks.get(id) ?? initialTaskState, event));
  }

  walletEvent(accountId: string, event: WalletEvent): void {
    if (event.type === 'HoldSettled') this.closings.set(holdKey(accountId, event.data.hold_id), { money: 'settled', cost: event.data.captured });
    else if (event.type === 'HoldReleased') this.closings.set(holdKey(accountId, event.data.hold_id), { money: 'released', cost: 0n });
  }

  /**
   * `openHold`: whether the folded wallet still has the hold open. A finished task whose hold is open
   * is a difference of its own: the gateway's sweep closes such holds within a minute, so one found here
   * is money a crash left held (or a sweep that cannot run).
   */
  async compare(sql: Sql, check: { compare: Compare; report: Report; openHold: (accountId: string, holdId: string) => boolean; accountId?: string | undefined }): Promise<void> {
    const { compare, report, openHold, accountId } = check;
    const rows = await sql.query<Record<string, unknown>>(
      `SELECT task_id, account_id, family, phase, status, visible, created_at::text AS created_at, updated_at::text AS updated_at,
              completed_at::text AS completed_at, deadline::text AS deadline, progress, error_code, unit_count, reserved::text AS reserved,
              charge::text AS charge, cost::text AS cost, money, hold_id, upstream_task_id, result_urls
         FROM tasks WHERE $1::text IS NULL OR account_id = $1`,
      [accountId ?? null],
    );
    const byId = new Map(rows.map((r) => [String(r.task_id), r]));
    const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    for (const [id, state] of this.tasks) {
      if (accountId !== undefined && state.accountId !== accountId) continue;
      const subject = `task ${id}`;
      const row = byId.get(id);
      byId.delete(id);
      if (!row) {
        report(subject, 'row', 'present', 'missing');
        continue;
      }
      compare(subject, 'account', state.accountId, row.account_id);
      compare(subject, 'family', state.family, row.family);
      compare(subject, 'phase', state.phase, row.phase);
      compare(subject, 'status', FAMILIES[state.family].statusOf(state.phase), row.status);
      compare(subject, 'visible', state.visible, row.visible);
      compare(subject, 'created_at', state.createdAt, num(row.created_at));
      // The spec: updated_at stays the creation time until the task ends.
      compare(subject, 'updated_at', state.completedAt ?? state.createdAt, num(row.updated_at));
      compare(subject, 'completed_at', state.completedAt, num(row.completed_at));
      compare(subject, 'deadline', state.deadline, num(row.deadline));
      compare(subject, 'progress', state.progress, num(row.progress));
      compare(subject, 'error code', state.error?.code ?? null, row.error_code);
      compare(subject, 'unit_count', state.unitCount, num(row.unit_count));
      compare(subject, 'result_urls', state.resultUrls, row.result_urls);
      compare(subject, 'reserved', state.reserved, BigInt(String(row.reserved)));
      compare(subject, 'charge', state.charge, BigInt(String(row.charge)));
      compare(subject, 'hold_id', state.holdId, row.hold_id);
      compare(subject, 'upstream task', state.upstream?.taskId ?? null, row.upstream_task_id);
      const closing = this.closings.get(holdKey(state.accountId, state.holdId));
      compare(subject, 'money', closing?.money ?? 'held', row.money);
      compare(subject, 'cost', closing?.cost ?? 0n, BigInt(String(row.cost)));
      if (isFinished(state.phase) && openHold(state.accountId, state.holdId))
        report(subject, 'hold', `closed (the task ended ${state.phase})`, `open: finished task, hold still open`);
    }
    for (const id of byId.keys()) report(`task ${id}`, 'row', 'absent (no events)', 'present');
  }
}

const holdKey = (accountId: string, holdId: string) => `${accountId}\u0000${holdId}`;
