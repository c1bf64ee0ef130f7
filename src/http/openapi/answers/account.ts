import { z } from 'zod';

/** The calling key's money and the account's call totals (free endpoints). */

/** A USD amount as an exact decimal string (the ledger's units formatted, `formatUsd`). */
export const Usd = z.string().regex(/^-?\d+\.\d+$/).describe('USD, an exact decimal string.');
const Unix = z.number().int().describe('Unix seconds.');
const Count = z.number().int().nonnegative();

export const KeyBalance = z
  .object({
    object: z.literal('key.balance'),
    remaining_usd: Usd,
    used_usd: Usd,
    total_usd: Usd,
    expires_at: Unix.nullable().describe('When the key expires (null: never).'),
  })
  .meta({ description: 'What this key can still spend (the wallet and its spend cap), what it has spent, and their sum.' });

export const BillingSubscription = z
  .object({
    object: z.literal('billing_subscription'),
    has_payment_method: z.boolean(),
    soft_limit_usd: z.number(),
    hard_limit_usd: z.number(),
    system_hard_limit_usd: z.number(),
    access_until: Unix.describe('When the key expires (0: never).'),
  })
  .meta({ description: 'The billing view third-party clients read: limits as USD numbers.' });

export const BillingUsage = z
  .object({ object: z.literal('list'), total_usage: z.number().describe('Cumulative, in cents.'), daily_costs: z.array(z.unknown()).max(0) })
  .meta({ description: 'The billing view third-party clients read: cumulative usage in cents.' });

/** The call log's totals (src/projections/call-log/queries.ts `UsageTotals`, its cost as USD). */
export const UsageTotals = z.object({
  total_requests: Count,
  success_requests: Count,
  error_requests: Count,
  interrupted_requests: Count,
  rejected_requests: Count,
  input_tokens: Count,
  output_tokens: Count,
  cached_tokens: Count,
  cost_usd: Usd,
});

export const Usage = z
  .object({
    object: z.literal('usage'),
    scope: z.enum(['account', 'key']),
    from: Unix,
    to: Unix,
    ...UsageTotals.shape,
    by_model: z.array(z.object({ model: z.string(), ...UsageTotals.shape })),
  })
  .meta({ description: 'Call totals over a window: every final outcome once, rejected calls included; `by_model` splits them per model.' });

export const SignUpAccepted = z
  .object({ status: z.literal('accepted'), message: z.string() })
  .meta({ description: 'The same answer whether the address was new or already had an account (no account enumeration).' });
