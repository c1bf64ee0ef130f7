import type { FastifyInstance } from 'fastify';
import { stringify } from 'csv-stringify/sync';
import { ADJUSTMENT_COLUMNS, CSV_COLUMNS, CSV_ROW_CAP, DEFAULT_WINDOW_S, queryLogs, usageTotals, type LogFilter, type LogRow, type UsageTotals } from '../../projections/call-log/queries';
import { formatUsd } from '../../money/usd';
import type { SqlQuery } from '../../storage/sql';
import { z } from 'zod';
import { pageSizeQuery, UnixSecondsQuery } from '../intake/numbers';
import type { RouteDoc } from '../openapi/route-doc';

/** Rows of a JSON page at most (`limit`, default 100). */
export const LOG_PAGE_ROWS = 1000;
/** A JSON page of the log ends early (with a cursor) once its rows reach this size: a row is
 * bounded (CALL_TEXT_LIMITS), but a thousand of the largest would still be tens of megabytes. */
export const LOG_PAGE_BYTES = 4 * 1024 * 1024;
/** The same for the CSV export, which then sets `x-truncated` like the 10,000-row cap. */
export const CSV_EXPORT_BYTES = 64 * 1024 * 1024;

const STATUSES = new Set(['success', 'error', 'interrupted', 'rejected']);

/** The next_cursor of a page: `{created_at}:{id}` of its last row (the id a UUID: the column's type). */
const Cursor = z
  .string()
  .regex(/^(\d{1,30}:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?$/, 'is not a cursor this API returned')
  .transform((text) => (text === '' ? undefined : { createdAt: Number(text.split(':')[0]), id: text.slice(text.indexOf(':') + 1) }))
  .refine((cursor) => cursor === undefined || Number.isSafeInteger(cursor.createdAt), 'is not a cursor this API returned')
  .optional();

const LogQuery = z.looseObject({
  from: UnixSecondsQuery.describe('Start of the window, Unix seconds (default: `to` minus 30 days).'),
  to: UnixSecondsQuery.describe('End of the window (exclusive), Unix seconds (default: now).'),
  model: z.string().optional(),
  status: z
    .string()
    .refine((text) => text.split(',').every((s) => s === '' || STATUSES.has(s.trim())), `must be one of ${[...STATUSES].join(', ')}`)
    .optional()
    .describe(`Comma-separated: ${[...STATUSES].join(', ')}.`),
  key_id: z.string().optional(),
  agent_id: z.string().optional().describe("An enterprise agent: its keys' calls only."),
  request_id: z.string().optional(),
  task_id: z.string().optional(),
  cursor: Cursor.describe('The `next_cursor` of the previous page.'),
});
const LogPageQuery = LogQuery.extend({ limit: pageSizeQuery(100, LOG_PAGE_ROWS) });
type LogQuery = z.output<typeof LogQuery>;

/** Column groups an export may add past the spec's columns. */
const EXTRA_COLUMNS = { adjustments: ADJUSTMENT_COLUMNS } as const;
const CsvQuery = LogQuery.extend({
  include: z
    .string()
    .refine((text) => text.split(',').every((g) => g.trim() === '' || g.trim() in EXTRA_COLUMNS), `must be a comma-separated list of: ${Object.keys(EXTRA_COLUMNS).join(', ')}`)
    .optional()
    .describe('`adjustments`: add `adjustment_usd` and `adjustment_reference` (what a re-rate changed) after the spec\'s 21 columns.'),
});
type CsvQuery = z.output<typeof CsvQuery>;

/** The export's columns: the spec's, then the groups `include` names. */
export function csvColumns(include: string | undefined): readonly CsvColumn[] {
  const groups = new Set((include ?? '').split(',').map((g) => g.trim()));
  return [...CSV_COLUMNS, ...(groups.has('adjustments') ? EXTRA_COLUMNS.adjustments : [])];
}
type CsvColumn = (typeof CSV_COLUMNS)[number] | (typeof ADJUSTMENT_COLUMNS)[number];

const LOGS_DOC: RouteDoc = {
  operationId: 'listAccountLogs',
  summary: "An account's call log, newest first",
  tags: ['admin-accounts'],
  query: LogPageQuery,
  responses: { 200: { description: '`{data: [row], next_cursor}`: a page ends early (with a cursor) once its rows reach 4 MB.' } },
};
const CSV_DOC: RouteDoc = {
  operationId: 'exportAccountLogs',
  summary: "An account's call log as CSV (10,000 rows at most)",
  description:
    "The spec's 21 columns exactly, in its order (id, created_at, key_name, key_prefix, model, status, error_code, error_message, input_tokens, output_tokens, cached_tokens, unit_count, unit_type, cost_usd, latency_ms, request_id, task_id, submitted_at, attempts_count, result_urls, result_expires_at), so that a fixed-schema import reads it; `include=adjustments` adds `adjustment_usd, adjustment_reference` after them.",
  tags: ['admin-accounts'],
  query: CsvQuery,
  responses: { 200: { description: 'The rows; `x-truncated: true` when the cap cut them.', mediaTypes: ['text/csv'] } },
};

const UsageQuery = z.looseObject({
  from: UnixSecondsQuery.describe('Start of the window, Unix seconds (default: `to` minus 30 days).'),
  to: UnixSecondsQuery.describe('End of the window (exclusive), Unix seconds (default: now).'),
  key_id: z.string().optional().describe('One key only.'),
  agent_id: z.string().optional().describe("One enterprise agent's keys only."),
});
const USAGE_DOC: RouteDoc = {
  operationId: 'getAccountUsage',
  summary: "An account's call totals over a window, optionally for one key or one agent",
  tags: ['admin-accounts'],
  query: UsageQuery,
  responses: { 200: { description: '`{account_id, from, to, key_id, agent_id, total_requests, ..., cost_usd, by_model[]}`.' } },
};
const usageView = ({ cost, ...counts }: UsageTotals) => ({ ...counts, cost_usd: formatUsd(cost) });

/** The longest prefix of `items` whose sizes add up to at most `budget`, and at least one item. */
export function withinBytes<T>(items: readonly T[], budget: number, size: (item: T) => number): T[] {
  let used = 0;
  for (let i = 0; i < items.length; i++) {
    used += size(items[i]!);
    if (used > budget && i > 0) return items.slice(0, i);
  }
  return [...items];
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/** Starts a spreadsheet reads as a formula (OWASP, "CSV Injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;
const NUMBER = /^-?\d+(\.\d+)?$/;

/**
 * A CSV cell no spreadsheet runs: a text that starts like a formula gets a leading `'` (a model
 * name a client made up, an upstream's error message, a key name all reach the export). A number
 * stays as it is, a negative one included, so the export's numbers still add up.
 */
export function inertCell(value: unknown): unknown {
  if (typeof value !== 'string' || !FORMULA_START.test(value) || NUMBER.test(value)) return value;
  return `'${value}`;
}

/** The CSV export of rows `queryLogs` read with the cap (the admin API's and the console's): the
 * spec's columns (or those `columns` names), formulas made inert, at most CSV_ROW_CAP rows and CSV_EXPORT_BYTES. */
export function logsCsv(rows: readonly LogRow[], columns: readonly CsvColumn[] = CSV_COLUMNS): { text: string; truncated: boolean } {
  const all = rows.slice(0, CSV_ROW_CAP).map((row) => columns.map((column) => inertCell(column === 'result_urls' ? row.result_urls.join('|') : row[column])));
  // A record's JSON is about the size of its CSV line.
  const records = withinBytes(all, CSV_EXPORT_BYTES, jsonBytes);
  return { text: stringify(records, { header: true, columns: [...columns], cast: { boolean: (v) => String(v) } }), truncated: rows.length > records.length };
}

function filterOf(accountId: string, q: LogQuery, now: number): LogFilter {
  const to = q.to ?? now + 1;
  const from = q.from ?? to - DEFAULT_WINDOW_S;
  return { accountId, from, to, model: q.model, status: q.status, keyId: q.key_id, agentId: q.agent_id, requestId: q.request_id, taskId: q.task_id, cursor: q.cursor };
}

/** The call log of an account: JSON pages, and the CSV export (10,000 rows at most). */
export function logRoutes(sql: SqlQuery, now: () => number) {
  return async (app: FastifyInstance) => {
    app.get<{ Params: { id: string }; Querystring: z.output<typeof LogPageQuery> }>('/accounts/:id/logs', { config: { openapi: LOGS_DOC } }, async (request) => {
      const { limit } = request.query;
      const rows = await queryLogs(sql, filterOf(request.params.id, request.query, now()), limit);
      const data = rows.slice(0, limit).map(({ key_id: _keyId, ...row }) => row);
      const page = withinBytes(data, LOG_PAGE_BYTES, jsonBytes);
      const last = page[page.length - 1];
      const more = rows.length > page.length;
      return { data: page, next_cursor: more && last ? `${last.created_at}:${last.id}` : null };
    });

    app.get<{ Params: { id: string }; Querystring: z.output<typeof UsageQuery> }>('/accounts/:id/usage', { config: { openapi: USAGE_DOC } }, async (request) => {
      const to = request.query.to ?? now() + 1;
      const from = request.query.from ?? to - DEFAULT_WINDOW_S;
      const { key_id, agent_id } = request.query;
      const { total, byModel } = await usageTotals(sql, request.params.id, from, to, key_id, agent_id);
      return {
        account_id: request.params.id,
        from,
        to,
        key_id: key_id ?? null,
        agent_id: agent_id ?? null,
        ...usageView(total),
        by_model: [...byModel.entries()].map(([model, totals]) => ({ model, ...usageView(totals) })),
      };
    });

    app.get<{ Params: { id: string }; Querystring: CsvQuery }>('/accounts/:id/logs.csv', { config: { openapi: CSV_DOC } }, async (request, reply) => {
      const csv = logsCsv(await queryLogs(sql, filterOf(request.params.id, request.query, now()), CSV_ROW_CAP), csvColumns(request.query.include));
      if (csv.truncated) reply.header('x-truncated', 'true');
      return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="logs-${request.params.id}.csv"`).send(csv.text);
    });
  };
}
