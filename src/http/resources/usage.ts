import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatUsd } from '../../money/usd';
import { DEFAULT_WINDOW_S, usageTotals, type UsageTotals } from '../../projections/call-log/queries';
import type { SqlQuery } from '../../storage/sql';
import { UnixSecondsQuery } from '../intake/numbers';
import type { Usage } from '../openapi/answers/account';
import type { RouteDoc } from '../openapi/route-doc';

const view = ({ cost, ...counts }: UsageTotals) => ({ ...counts, cost_usd: formatUsd(cost) });

const UsageQuery = z.looseObject({
  from: UnixSecondsQuery.describe('Start of the window, Unix seconds (default: `to` minus 30 days).'),
  to: UnixSecondsQuery.describe('End of the window (exclusive), Unix seconds (default: now).'),
  scope: z.enum(['account', 'key'], { error: 'must be account or key' }).optional().describe('`key`: the calling key only (default `account`).'),
});

const USAGE_DOC: RouteDoc = {
  operationId: 'getUsage',
  summary: "The account's call totals over a window",
  description: 'Every final outcome once, rejected calls included, failover attempts not; `by_model` splits them per model.',
  tags: ['account'],
  query: UsageQuery,
  responses: { 200: { description: '`{object: usage, scope, from, to, total_requests, ..., cost_usd, by_model[]}`.' } },
};

/** `GET /api/v1/usage`: the account's call totals (every final outcome once, rejected
 * calls included, failover attempts not); `?scope=key` narrows to the calling key. */
export function usageRoutes(sql: SqlQuery, now: () => number) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: z.output<typeof UsageQuery> }>('/api/v1/usage', { config: { auth: 'key', free: true, openapi: USAGE_DOC } }, async (request): Promise<z.output<typeof Usage>> => {
      const caller = request.caller!;
      const to = request.query.to ?? now() + 1;
      const from = request.query.from ?? to - DEFAULT_WINDOW_S;
      const keyOnly = request.query.scope === 'key';
      const { total, byModel } = await usageTotals(sql, caller.accountId, from, to, keyOnly ? caller.keyId : undefined);
      return {
        object: 'usage',
        scope: keyOnly ? 'key' : 'account',
        from,
        to,
        ...view(total),
        by_model: [...byModel.entries()].map(([model, totals]) => ({ model, ...view(totals) })),
      };
    });
  };
}
