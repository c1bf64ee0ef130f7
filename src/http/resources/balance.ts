import type { FastifyInstance } from 'fastify';
import { available } from '../../commands/wallet/decider';
import { formatUsd, max, min, usdNumber } from '../../money/usd';
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

/** `GET /v1/key/balance` and the billing-compatible views: free, usable at a zero
 * balance, and they do not count as using the key. */
export async function balanceRoutes(app: FastifyInstance) {
  app.get('/v1/key/balance', { config: FREE }, async (request) => {
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
    app.get(`${prefix}/dashboard/billing/subscription`, { config: FREE }, async (request) => {
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
    app.get(`${prefix}/dashboard/billing/usage`, { config: FREE }, async (request) => {
      const b = keyBalance(request.caller!);
      // Cumulative, in cents; start_date and end_date are accepted and ignored.
      return { object: 'list', total_usage: usdNumber(b.used * 100n), daily_costs: [] };
    });
  }
}
