import type { FastifyInstance } from 'fastify';
import { stringify } from 'csv-stringify/sync';
import { CSV_COLUMNS, CSV_ROW_CAP, DEFAULT_WINDOW_S, queryLogs, type LogFilter } from '../../projections/call-log/queries';
import type { SqlQuery } from '../../storage/sql';
import { unixSecondsParam as seconds } from '../intake/numbers';
import { AdminError } from './admin-error';

interface LogQuery {
  from?: string;
  to?: string;
  model?: string;
  status?: string;
  key_id?: string;
  request_id?: string;
  task_id?: string;
  cursor?: string;
  limit?: string;
}

const STATUSES = new Set(['success', 'error', 'interrupted', 'rejected']);

/** Rows of a JSON page at most (`limit`, default 100). */
export const LOG_PAGE_ROWS = 1000;
/** A JSON page of the log ends early (with a cursor) once its rows reach this size: a row is
 * bounded (CALL_TEXT_LIMITS), but a thousand of the largest would still be tens of megabytes. */
export const LOG_PAGE_BYTES = 4 * 1024 * 1024;
/** The same for the CSV export, which then sets `x-truncated` like the 10,000-row cap. */
export const CSV_EXPORT_BYTES = 64 * 1024 * 1024;

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

function filterOf(accountId: string, q: LogQuery, now: number): LogFilter {
  const to = seconds(q.to, 'to', now + 1);
  const from = seconds(q.from, 'from', to - DEFAULT_WINDOW_S);
  for (const s of (q.status ?? '').split(',').filter(Boolean))
    if (!STATUSES.has(s.trim())) throw new AdminError(400, 'invalid_request', `status must be one of ${[...STATUSES].join(', ')}`);
  let cursor: LogFilter['cursor'];
  if (q.cursor) {
    const match = /^(\d+):([0-9a-f-]{36})$/.exec(q.cursor);
    if (!match) throw new AdminError(400, 'invalid_request', 'cursor is not one this API returned');
    cursor = { createdAt: seconds(match[1], 'cursor', 0), id: match[2]! };
  }
  return { accountId, from, to, model: q.model, status: q.status, keyId: q.key_id, requestId: q.request_id, taskId: q.task_id, cursor };
}

/** The call log of an account: JSON pages, and the CSV export (10,000 rows at most). */
export function logRoutes(sql: SqlQuery, now: () => number) {
  return async (app: FastifyInstance) => {
    app.get<{ Params: { id: string }; Querystring: LogQuery }>('/accounts/:id/logs', async (request) => {
      const limit = Math.min(Math.max(Number(request.query.limit ?? 100) || 100, 1), LOG_PAGE_ROWS);
      const rows = await queryLogs(sql, filterOf(request.params.id, request.query, now()), limit);
      const data = rows.slice(0, limit).map(({ key_id: _keyId, ...row }) => row);
      const page = withinBytes(data, LOG_PAGE_BYTES, jsonBytes);
      const last = page[page.length - 1];
      const more = rows.length > page.length;
      return { data: page, next_cursor: more && last ? `${last.created_at}:${last.id}` : null };
    });

    app.get<{ Params: { id: string }; Querystring: LogQuery }>('/accounts/:id/logs.csv', async (request, reply) => {
      const rows = await queryLogs(sql, filterOf(request.params.id, request.query, now()), CSV_ROW_CAP);
      const all = rows.slice(0, CSV_ROW_CAP).map((row) => CSV_COLUMNS.map((column) => inertCell(column === 'result_urls' ? row.result_urls.join('|') : row[column])));
      // A record's JSON is about the size of its CSV line.
      const records = withinBytes(all, CSV_EXPORT_BYTES, jsonBytes);
      if (rows.length > records.length) reply.header('x-truncated', 'true');
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="logs-${request.params.id}.csv"`)
        .send(stringify(records, { header: true, columns: [...CSV_COLUMNS], cast: { boolean: (v) => String(v) } }));
    });
  };
}
