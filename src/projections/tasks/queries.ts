import type { TaskFamily } from '../../events/catalog';
import type { Sql } from '../../storage/sql';

/** A task as its view row holds it. */
export interface TaskRow {
  readonly task_id: string;
  readonly account_id: string;
  readonly key_id: string | null;
  readonly family: TaskFamily;
  readonly endpoint: string;
  readonly model: string;
  readonly phase: string;
  readonly status: string;
  readonly created_at: number;
  readonly updated_at: number;
  readonly started_at: number | null;
  readonly completed_at: number | null;
  readonly deadline: number;
  readonly progress: number | null;
  readonly params: Record<string, unknown>;
  readonly result: Record<string, unknown> | null;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly unit_count: number | null;
  readonly reserved: bigint;
  readonly charge: bigint;
  readonly cost: bigint;
  readonly money: 'held' | 'settled' | 'released';
  readonly request_id: string;
  readonly hold_id: string;
  readonly channel_id: string | null;
  readonly upstream_task_id: string | null;
  readonly result_urls: string[];
  readonly result_expires_at: number | null;
}

export interface TaskListFilter {
  readonly accountId: string;
  readonly family: TaskFamily;
  readonly statuses: readonly string[];
  readonly limit: number;
  /** Submit time in [from, to). */
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  /** The last row of the previous page. */
  readonly cursor?: { readonly createdAt: number; readonly taskId: string } | undefined;
  /** Only tasks of these endpoints (e.g. music generations apart from its asset follow-ups). */
  readonly endpoints?: readonly string[] | undefined;
}

const COLUMNS = `task_id, account_id, key_id, family, endpoint, model, phase, status, created_at::float8 AS created_at, updated_at::float8 AS updated_at,
  started_at::float8 AS started_at, completed_at::float8 AS completed_at, deadline::float8 AS deadline, progress, params, result, error_code,
  error_message, unit_count, reserved::text AS reserved, charge::text AS charge, cost::text AS cost, money, request_id, hold_id, channel_id, upstream_task_id, result_urls,
  result_expires_at::float8 AS result_expires_at`;

interface RawRow extends Omit<TaskRow, 'reserved' | 'charge' | 'cost'> {
  reserved: string;
  charge: string;
  cost: string;
}

const toRow = (r: RawRow): TaskRow => ({ ...r, reserved: BigInt(r.reserved), charge: BigInt(r.charge), cost: BigInt(r.cost) });

export class TaskQueries {
  constructor(private readonly sql: Sql) {}

  /** A task of the account and family, as polls see it: invisible and foreign tasks do not exist. */
  async get(accountId: string, family: TaskFamily, taskId: string): Promise<TaskRow | null> {
    const rows = await this.sql.query<RawRow>(`SELECT ${COLUMNS} FROM tasks WHERE task_id = $1 AND account_id = $2 AND family = $3 AND visible`, [
      taskId,
      accountId,
      family,
    ]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** Newest first; one row more than `limit` is read to tell whether a next page exists. */
  async list(filter: TaskListFilter): Promise<{ rows: TaskRow[]; more: boolean }> {
    const params: unknown[] = [filter.accountId, filter.family, [...filter.statuses], filter.limit + 1];
    const where = ['account_id = $1', 'family = $2', 'visible', 'status = ANY($3::text[])'];
    const add = (clause: (n: number) => string, value: unknown) => {
      params.push(value);
      where.push(clause(params.length));
    };
    if (filter.from !== undefined) add((n) => `created_at >= $${n}`, filter.from);
    if (filter.to !== undefined) add((n) => `created_at < $${n}`, filter.to);
    if (filter.endpoints) add((n) => `endpoint = ANY($${n}::text[])`, [...filter.endpoints]);
    if (filter.cursor) {
      params.push(filter.cursor.createdAt, filter.cursor.taskId);
      where.push(`(created_at, task_id) < ($${params.length - 1}, $${params.length})`);
    }
    const rows = await this.sql.query<RawRow>(
      `SELECT ${COLUMNS} FROM tasks WHERE ${where.join(' AND ')} ORDER BY created_at DESC, task_id DESC LIMIT $4`,
      params,
    );
    return { rows: rows.slice(0, filter.limit).map(toRow), more: rows.length > filter.limit };
  }

  /** Tasks still in flight (every account), oldest deadline first: what a restart picks up again. */
  async inFlight(limit = 10_000): Promise<TaskRow[]> {
    const rows = await this.sql.query<RawRow>(
      `SELECT ${COLUMNS} FROM tasks WHERE phase IN ('created', 'queued', 'running') ORDER BY deadline LIMIT $1`,
      [limit],
    );
    return rows.map(toRow);
  }

  /** In-flight tasks past their deadline. */
  async overdue(now: number, limit = 500): Promise<TaskRow[]> {
    const rows = await this.sql.query<RawRow>(
      `SELECT ${COLUMNS} FROM tasks WHERE phase IN ('created', 'queued', 'running') AND deadline <= $1 ORDER BY deadline LIMIT $2`,
      [now, limit],
    );
    return rows.map(toRow);
  }

  /** Tasks in flight per family (`/metrics`): a count over the partial index of tasks in flight. */
  async inFlightByFamily(): Promise<Map<TaskFamily, number>> {
    const rows = await this.sql.query<{ family: TaskFamily; n: number }>(
      `SELECT family, count(*)::int AS n FROM tasks WHERE phase IN ('created', 'queued', 'running') GROUP BY family`,
    );
    return new Map(rows.map((r) => [r.family, Number(r.n)]));
  }

  /** Finished tasks whose hold the view has not seen closed (a process died between the two). */
  async unclosed(finishedBefore: number, limit = 500): Promise<TaskRow[]> {
    const rows = await this.sql.query<RawRow>(
      `SELECT ${COLUMNS} FROM tasks WHERE money = 'held' AND phase NOT IN ('created', 'queued', 'running') AND completed_at <= $1
        ORDER BY completed_at LIMIT $2`,
      [finishedBefore, limit],
    );
    return rows.map(toRow);
  }
}
