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
      const limit = Math.min(Math.max(Number(request.query.limit ?? 100) || 100, 1), 1000);
      const rows = await queryLogs(sql, filterOf(request.params.id, request.query, now()), limit);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return { data: page.map(({ key_id: _keyId, ...row }) => row), next_cursor: rows.length > limit && last ? `${last.created_at}:${last.id}` : null };
    });

    app.get<{ Params: { id: string }; Querystring: LogQuery }>('/accounts/:id/logs.csv', async (request, reply) => {
      const rows = await queryLogs(sql, filterOf(request.params.id, request.query, now()), CSV_ROW_CAP);
      if (rows.length > CSV_ROW_CAP) reply.header('x-truncated', 'true');
      const records = rows.slice(0, CSV_ROW_CAP).map((row) => CSV_COLUMNS.map((column) => (column === 'result_urls' ? row.result_urls.join('|') : row[column])));
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="logs-${request.params.id}.csv"`)
        .send(stringify(records, { header: true, columns: [...CSV_COLUMNS], cast: { boolean: (v) => String(v) } }));
    });
  };
}
