import type { FastifyInstance } from 'fastify';
import { formatUsd } from '../../money/usd';
import { DEFAULT_WINDOW_S, usageTotals, type UsageTotals } from '../../projections/call-log/queries';
import type { SqlQuery } from '../../storage/sql';
import { GatewayError } from '../errors';
import { unixSecondsParam as seconds } from '../intake/numbers';

const view = ({ cost, ...counts }: UsageTotals) => ({ ...counts, cost_usd: formatUsd(cost) });

/** `GET /api/v1/usage`: the account's call totals (every final outcome once, rejected
 * calls included, failover attempts not); `?scope=key` narrows to the calling key. */
export function usageRoutes(sql: SqlQuery, now: () => number) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: { from?: string; to?: string; scope?: string } }>(
      '/api/v1/usage',
      { config: { auth: 'key', free: true } },
      async (request) => {
        const caller = request.caller!;
        const to = seconds(request.query.to, 'to', now() + 1);
        const from = seconds(request.query.from, 'from', to - DEFAULT_WINDOW_S);
        if (request.query.scope !== undefined && !['account', 'key'].includes(request.query.scope))
          throw new GatewayError('invalid_request', 'scope must be account or key');
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
      },
    );
  };
}
