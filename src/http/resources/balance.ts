import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { available } from '../../commands/wallet/state';
import { formatUsd, max, min, usdNumber } from '../../money/usd';
import type { BillingSubscription, BillingUsage, KeyBalance } from '../openapi/answers/account';
import type { RouteDoc } from '../openapi/route-doc';
import type { Caller } from '../plugins/auth';

/** What a key can still spend now, what it has spent, and their sum, in units. */
export function keyBalance(caller: Caller) {
  const usage = caller.wallet.keys.get(caller.keyId) ?? { spent: 0n, held: 0n };
  let remaining = available(caller.wallet);
  const cap = caller.key.settings.spend_cap;
  if (cap !== null) remaining = min(remaining, cap - usage.spent - usage.held);
  remaining = max(remaining, 0n);
  return { remaining, used: usage.spent, total: remaining + usage.spent, expiresAt: caller.key.settings.expires_at };
}

// Not rate limited either (spec: key balance and the billing views are exempt).
const FREE = { auth: 'key', free: true, touchesLastUsed: false, liveWallet: true, rateLimited: false } as const;

const BALANCE_DOC: RouteDoc = {
  operationId: 'getKeyBalance',
  summary: 'What this key can still spend, what it has spent, and their sum',
  description: 'Free, answers at a zero balance, and does not count as using the key. Amounts are USD decimal strings.',
  tags: ['account'],
  responses: { 200: { description: '`{object: key.balance, remaining_usd, used_usd, total_usd, expires_at}`.' } },
};

/** Accepted and ignored: `total_usage` is cumulative. */
const BillingUsageQuery = z.looseObject({
  start_date: z.string().optional().describe('Accepted and ignored.'),
  end_date: z.string().optional().describe('Accepted and ignored.'),
});

/** `/v1/dashboard/...` and `/dashboard/...`: two paths, two operation ids. */
const billingDocs = (prefix: string): { subscription: RouteDoc; usage: RouteDoc } => {
  const suffix = prefix === '' ? 'Unprefixed' : '';
  return {
    subscription: {
      operationId: `getBillingSubscription${suffix}`,
      summary: 'Billing view for third-party clients: the limits (USD numbers)',
      tags: ['account'],
      responses: { 200: { description: '`{object: billing_subscription, has_payment_method, soft_limit_usd, hard_limit_usd, system_hard_limit_usd, access_until}`.' } },
    },
    usage: {
      operationId: `getBillingUsage${suffix}`,
      summary: 'Billing view for third-party clients: cumulative usage in cents',
      tags: ['account'],
      query: BillingUsageQuery,
      responses: { 200: { description: '`{object: list, total_usage, daily_costs: []}`.' } },
    },
  };
};

/** `GET /v1/key/balance` and the billing-compatible views: free, usable at a zero
 * balance, and they do not count as using the key. */
export async function balanceRoutes(app: FastifyInstance) {
  // Typed by the answers /openapi.json publishes (openapi/answers/).
  app.get('/v1/key/balance', { config: { ...FREE, openapi: BALANCE_DOC } }, async (request): Promise<z.output<typeof KeyBalance>> => {
    const b = keyBalance(request.caller!);
    return {
      object: 'key.balance',
      remaining_usd: formatUsd(b.remaining),
      used_usd: formatUsd(b.used),
      total_usd: formatUsd(b.total),
      expires_at: b.expiresAt,
    };
  });

  for (const prefix of ['/v1', '']) {
    const docs = billingDocs(prefix);
    app.get(`${prefix}/dashboard/billing/subscription`, { config: { ...FREE, openapi: docs.subscription } }, async (request): Promise<z.output<typeof BillingSubscription>> => {
      const b = keyBalance(request.caller!);
      const total = usdNumber(b.total);
      return {
        object: 'billing_subscription',
        // Payment methods belong to the main site's billing page, not to the API.
        has_payment_method: false,
        soft_limit_usd: total,
        hard_limit_usd: total,
        system_hard_limit_usd: total,
        access_until: b.expiresAt ?? 0,
      };
    });
    app.get(`${prefix}/dashboard/billing/usage`, { config: { ...FREE, openapi: docs.usage } }, async (request): Promise<z.output<typeof BillingUsage>> => {
      const b = keyBalance(request.caller!);
      // Cumulative, in cents; start_date and end_date are accepted and ignored.
      return { object: 'list', total_usage: usdNumber(b.used * 100n), daily_costs: [] };
    });
  }
}
