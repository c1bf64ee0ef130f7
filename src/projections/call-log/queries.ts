import { formatUsd } from '../../money/usd';
import type { BilledCall } from '../../commands/rerate';
import type { SqlQuery } from '../../storage/sql';
import { CALL_TEXT_LIMITS, clipText } from './bounds';

/** The spec's CSV export columns ("Call-log row"), exactly and in its order: the default export, which a
 * finance import with a fixed schema (e.g. Postgres `COPY … CSV HEADER`) reads. */
export const CSV_COLUMNS = [
  'id',
  'created_at',
  'key_name',
  'key_prefix',
  'model',
  'status',
  'error_code',
  'error_message',
  'input_tokens',
  'output_tokens',
  'cached_tokens',
  'unit_count',
  'unit_type',
  'cost_usd',
  'latency_ms',
  'request_id',
  'task_id',
  'submitted_at',
  'attempts_count',
  'result_urls',
  'result_expires_at',
] as const;

/** Past the spec's columns, only on request (`include=adjustments`): what a re-rate changed (signed USD)
 * and its reference. */
export const ADJUSTMENT_COLUMNS = ['adjustment_usd', 'adjustment_reference'] as const;

export const DEFAULT_WINDOW_S = 30 * 24 * 3600;
export const CSV_ROW_CAP = 10_000;

export interface LogFilter {
  readonly accountId: string;
  readonly from: number;
  readonly to: number;
  readonly model?: string | undefined;
  readonly status?: string | undefined;
  readonly keyId?: string | undefined;
  /** The enterprise agent whose keys made the calls. */
  readonly agentId?: string | undefined;
  readonly requestId?: string | undefined;
  readonly taskId?: string | undefined;
  /** One row by its id (a UUID; the console's call detail). */
  readonly id?: string | undefined;
  /** `{created_at}:{id}` of the last row of the previous page. */
  readonly cursor?: { createdAt: number; id: string } | undefined;
}

export interface LogRow {
  id: string;
  created_at: number;
  key_id: string | null;
  key_name: string | null;
  key_prefix: string | null;
  model: string;
  status: string;
  error_code: string | null;
  error_message: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  /** Input tokens written to the prompt cache, and the part of them written for 1 hour (the rest: 5 minutes);
   * 0 on rows from before they were recorded. Not CSV columns: the spec fixes those. */
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  unit_count: number | null;
  unit_type: string | null;
  cost_usd: string;
  latency_ms: number;
  request_id: string;
  task_id: string | null;
  submitted_at: number;
  attempts_count: number;
  result_urls: string[];
  result_expires_at: number | null;
  adjustment_usd: string;
  adjustment_reference: string | null;
  /** The built-in tool fees inside `cost_usd` (not a CSV column: the spec fixes those). */
  tool_fee_usd: string | null;
  /** The enterprise agent whose key made the call (null: an ordinary key). */
  agent_id: string | null;
  /** The model asked for when a fallback answered (`model`: the one that answered and was billed); null
   * otherwise. Not a CSV column: the spec fixes those. */
  requested_model: string | null;
}

interface RawRow {
  id: string;
  created_at: string;
  key_id: string | null;
  key_name: string | null;
  key_prefix: string | null;
  model: string;
  status: string;
  error_code: string | null;
  error_message: string | null;
  input_tokens: string;
  output_tokens: string;
  cached_tokens: string;
  cache_write_tokens: string | null;
  cache_write_1h_tokens: string | null;
  unit_count: number | null;
  unit_type: string | null;
  cost: string;
  latency_ms: number;
  request_id: string;
  task_id: string | null;
  submitted_at: string;
  attempts_count: number;
  result_urls: string[];
  result_expires_at: string | null;
  adjustment: string;
  adjustment_reference: string | null;
  tool_fee: string | null;
  agent_id: string | null;
  requested_model: string | null;
}

/** Newest first, filtered, keyset-paged. Returns one row more than asked when there is a next page. */
export async function queryLogs(sql: SqlQuery, filter: LogFilter, limit: number): Promise<LogRow[]> {
  const params: unknown[] = [filter.accountId, filter.from, filter.to];
  const where = ['c.account_id = $1', 'c.created_at >= $2', 'c.created_at < $3'];
  const add = (clause: (n: number) => string, value: unknown) => {
    params.push(value);
    where.push(clause(params.length));
  };
  if (filter.model) add((n) => `c.model = $${n}`, filter.model);
  if (filter.status) add((n) => `c.status = ANY($${n}::text[])`, filter.status.split(',').map((s) => s.trim()));
  if (filter.keyId) add((n) => `c.key_id = $${n}`, filter.keyId);
  if (filter.agentId) add((n) => `c.agent_id = $${n}`, filter.agentId);
  if (filter.requestId) add((n) => `c.request_id = $${n}`, filter.requestId);
  if (filter.taskId) add((n) => `c.task_id = $${n}`, filter.taskId);
  if (filter.id) add((n) => `c.id = $${n}::uuid`, filter.id);
  if (filter.cursor) {
    params.push(filter.cursor.createdAt, filter.cursor.id);
    where.push(`(c.created_at, c.id) < ($${params.length - 1}::bigint, $${params.length}::uuid)`);
  }
  params.push(limit + 1);
  const rows = await sql.query<RawRow>(
    // Rows written before call records were bounded may hold texts of any size: read only what a row may show.
    `SELECT c.id::text AS id, c.created_at::text AS created_at, c.key_id, k.name AS key_name, k.prefix AS key_prefix,
            left(c.model, ${CALL_TEXT_LIMITS.model + 1}) AS model, c.status,
            c.error_code, left(c.error_message, ${CALL_TEXT_LIMITS.error_message + 1}) AS error_message, c.input_tokens::text AS input_tokens, c.output_tokens::text AS output_tokens,
            c.cached_tokens::text AS cached_tokens, c.cache_write_tokens::text AS cache_write_tokens,
            c.cache_write_1h_tokens::text AS cache_write_1h_tokens, c.unit_count, c.unit_type, c.cost::text AS cost, c.latency_ms, c.request_id,
            c.task_id, c.submitted_at::text AS submitted_at, c.attempts_count, c.result_urls, c.result_expires_at::text AS result_expires_at,
            c.adjustment::text AS adjustment, c.adjustment_reference,
            c.tool_fee::text AS tool_fee, c.agent_id, c.requested_model
       FROM call_log c LEFT JOIN api_keys k ON k.key_id = c.key_id
      WHERE ${where.join(' AND ')}
      ORDER BY c.created_at DESC, c.id DESC
      LIMIT $${params.length}`,
    params,
  );
  return rows.map((r) => ({
    id: r.id,
    created_at: Number(r.created_at),
    key_id: r.key_id,
    key_name: r.key_name,
    key_prefix: r.key_prefix,
    model: clipText(r.model, CALL_TEXT_LIMITS.model),
    status: r.status,
    error_code: r.error_code,
    error_message: r.error_message === null ? null : clipText(r.error_message, CALL_TEXT_LIMITS.error_message),
    input_tokens: Number(r.input_tokens),
    output_tokens: Number(r.output_tokens),
    cached_tokens: Number(r.cached_tokens),
    cache_write_tokens: r.cache_write_tokens === null ? 0 : Number(r.cache_write_tokens),
    cache_write_1h_tokens: r.cache_write_1h_tokens === null ? 0 : Number(r.cache_write_1h_tokens),
    unit_count: r.unit_count,
    unit_type: r.unit_type,
    cost_usd: formatUsd(BigInt(r.cost)),
    latency_ms: r.latency_ms,
    request_id: r.request_id,
    task_id: r.task_id,
    submitted_at: Number(r.submitted_at),
    attempts_count: r.attempts_count,
    result_urls: r.result_urls,
    result_expires_at: r.result_expires_at === null ? null : Number(r.result_expires_at),
    adjustment_usd: formatUsd(BigInt(r.adjustment)),
    adjustment_reference: r.adjustment_reference,
    tool_fee_usd: r.tool_fee === null ? null : formatUsd(BigInt(r.tool_fee)),
    agent_id: r.agent_id,
    requested_model: r.requested_model,
  }));
}

export interface UsageTotals {
  total_requests: number;
  success_requests: number;
  error_requests: number;
  interrupted_requests: number;
  rejected_requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost: bigint;
}

/** Totals over the call log: every final outcome counts once (rejected calls too,
 * failover attempts not). */
export async function usageTotals(sql: SqlQuery, accountId: string, from: number, to: number, keyId?: string, agentId?: string) {
  const rows = await sql.query<{ model: string; status: string; n: string; input: string; output: string; cached: string; cost: string }>(
    `SELECT model, status, count(*)::text AS n, sum(input_tokens)::text AS input, sum(output_tokens)::text AS output,
            sum(cached_tokens)::text AS cached, sum(cost + adjustment)::text AS cost
       FROM call_log
      WHERE account_id = $1 AND created_at >= $2 AND created_at < $3 AND ($4::text IS NULL OR key_id = $4) AND ($5::text IS NULL OR agent_id = $5)
      GROUP BY model, status ORDER BY model, status`,
    [accountId, from, to, keyId ?? null, agentId ?? null],
  );
  const empty = (): UsageTotals => ({
    total_requests: 0,
    success_requests: 0,
    error_requests: 0,
    interrupted_requests: 0,
    rejected_requests: 0,
    input_tokens: 0,
    output_tokens: 0,
    cached_tokens: 0,
    cost: 0n,
  });
  const total = empty();
  const byModel = new Map<string, UsageTotals>();
  for (const r of rows) {
    for (const t of [total, byModel.get(r.model) ?? byModel.set(r.model, empty()).get(r.model)!]) {
      const n = Number(r.n);
      t.total_requests += n;
      const field = `${r.status}_requests` as 'success_requests';
      if (field in t) t[field] += n;
      t.input_tokens += Number(r.input);
      t.output_tokens += Number(r.output);
      t.cached_tokens += Number(r.cached);
      t.cost += BigInt(r.cost);
    }
  }
  return { total, byModel };
}

export interface DailyUsage {
  /** UTC day, `YYYY-MM-DD`. */
  readonly day: string;
  readonly model: string;
  readonly requests: number;
  readonly cost: bigint;
}

/** Calls and cost per UTC day and model over [from, to) (the console's usage chart). */
export async function dailyUsage(sql: SqlQuery, accountId: string, from: number, to: number, offsetSeconds = 0): Promise<DailyUsage[]> {
  // Days of a zone `offsetSeconds` east of UTC (the viewer's; its offset now, for the whole window).
  const rows = await sql.query<{ day: string; model: string; n: string; cost: string }>(
    `SELECT ((created_at + $4) / 86400)::text AS day, model, count(*)::text AS n, sum(cost + adjustment)::text AS cost
       FROM call_log WHERE account_id = $1 AND created_at >= $2 AND created_at < $3
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [accountId, from, to, offsetSeconds],
  );
  return rows.map((r) => ({ day: new Date(Number(r.day) * 86400_000).toISOString().slice(0, 10), model: r.model, requests: Number(r.n), cost: BigInt(r.cost) }));
}

/** Billed calls (success, interrupted) of a model submitted in [from, to), by account, for a
 * re-rate; `cost` is the capture plus earlier adjustments. At most `limit` rows. */
export async function billedCalls(sql: SqlQuery, model: string, from: number, to: number, limit: number): Promise<BilledCall[]> {
  const rows = await sql.query<{
    account_id: string;
    request_id: string;
    key_id: string | null;
    submitted_at: string;
    input_tokens: string;
    output_tokens: string;
    cached_tokens: string;
    cache_write_tokens: string | null;
    cache_write_1h_tokens: string | null;
    unit_count: number | null;
    tool_fee: string | null;
    hold: string | null;
    cost: string;
  }>(
    `SELECT account_id, request_id, key_id, submitted_at::text AS submitted_at, input_tokens::text AS input_tokens,
            output_tokens::text AS output_tokens, cached_tokens::text AS cached_tokens, cache_write_tokens::text AS cache_write_tokens,
            cache_write_1h_tokens::text AS cache_write_1h_tokens, unit_count, tool_fee::text AS tool_fee, hold::text AS hold, (cost + adjustment)::text AS cost
       FROM call_log
      WHERE model = $1 AND submitted_at >= $2 AND submitted_at < $3 AND status IN ('success', 'interrupted')
      ORDER BY account_id, submitted_at, id
      LIMIT $4`,
    [model, from, to, limit],
  );
  return rows.map((r) => ({
    accountId: r.account_id,
    requestId: r.request_id,
    keyId: r.key_id,
    submittedAt: Number(r.submitted_at),
    inputTokens: Number(r.input_tokens),
    outputTokens: Number(r.output_tokens),
    cachedTokens: Number(r.cached_tokens),
    cacheWriteTokens: r.cache_write_tokens === null ? 0 : Number(r.cache_write_tokens),
    cacheWrite1hTokens: r.cache_write_1h_tokens === null ? 0 : Number(r.cache_write_1h_tokens),
    unitCount: r.unit_count,
    toolFee: r.tool_fee === null ? 0n : BigInt(r.tool_fee),
    hold: r.hold === null ? null : BigInt(r.hold),
    cost: BigInt(r.cost),
  }));
}
