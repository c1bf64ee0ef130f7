import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import { planRerate, rerateable, RerateError, type AccountRerate } from '../../commands/rerate';
import type { ModelRegistry } from '../../config/registry';
import { Instant, PriceSchema } from '../../config/schema';
import { formatUsd } from '../../money/usd';
import { billedCalls } from '../../projections/call-log/queries';
import type { ProjectionRunner } from '../../projections/runner/runner';
import type { SqlQuery } from '../../storage/sql';
import type { RouteDoc } from '../openapi/route-doc';
import { AdminError, fromDomain, parse } from './admin-error';
import { operatorText } from './operator-text';

/** More calls than this in one window: narrow it (a re-rate holds its plan in memory). */
export const RERATE_MAX_CALLS = 200_000;

const When = Instant.describe('Unix seconds (a number or digits), RFC 3339 with its offset, or YYYY-MM-DD (UTC midnight).');

const Rerate = z
  .object({
    model: operatorText(200),
    from: When,
    to: When,
    price: PriceSchema,
    apply: z.boolean().default(false),
    reference: operatorText(200).optional(),
    reason: z.string().trim().max(500).optional(),
  })
  .strict()
  .refine((r) => r.from < r.to, { message: 'from must be before to', path: ['from'] })
  .refine((r) => !r.apply || r.reference !== undefined, { message: 'apply needs a reference (it makes the re-rate idempotent)', path: ['reference'] });

const RERATE_DOC: RouteDoc = {
  operationId: 'rerate',
  summary: 'Re-rate past calls of a model at another price (a dry run unless `apply: true`)',
  description:
    'Every affected call with its old cost, new cost and difference, and per-account totals; with `apply: true` one adjustment per account, idempotent on `reference`. Differences are new − old: positive charges more, negative refunds.',
  tags: ['admin-billing'],
  body: { json: Rerate },
  responses: { 200: { description: '`{object: rerate, model, from, to, price, applied, reference, unchanged_calls, calls[], accounts[], total}`.' } },
  errors: { 404: 'The model is not in the catalogue: `model_not_found`.' },
};

export interface RerateOptions {
  readonly ledger: Ledger;
  readonly runner: ProjectionRunner;
  readonly sql: SqlQuery;
  readonly registry: ModelRegistry;
}

const usd = (units: bigint) => formatUsd(units);

/**
 * `POST /admin/v1/rerates`: a dry run by default (every affected call with its old cost, new cost
 * and difference, and per-account totals); with `apply: true` one adjustment per account,
 * idempotent on `reference`. Differences are new − old: positive charges more, negative refunds.
 */
export function rerateRoutes({ ledger, runner, sql, registry }: RerateOptions) {
  return async (app: FastifyInstance) => {
    app.post('/rerates', { config: { openapi: RERATE_DOC } }, async (request) => {
      const body = parse(Rerate, request.body);
      const model = registry.resolve(body.model);
      if (!model) throw new AdminError(404, 'model_not_found', `model ${body.model} is not in the catalogue`);
      const priced = { ...model, price: body.price };
      if (!rerateable(priced)) throw new AdminError(400, 'invalid_request', `re-rating supports token-billed and per-image models; ${model.id} is ${model.kind}`);

      // The call log is a projection: it must have every call the log holds before it is read.
      await runner.catchUpToHead();
      const calls = await billedCalls(sql, model.id, body.from, body.to, RERATE_MAX_CALLS + 1);
      if (calls.length > RERATE_MAX_CALLS)
        throw new AdminError(400, 'invalid_request', `more than ${RERATE_MAX_CALLS} billed calls in the window; re-rate it in shorter windows`);
      let plan;
      try {
        plan = planRerate(priced, calls, registry.config.discounts);
      } catch (error) {
        if (error instanceof RerateError) throw new AdminError(400, 'invalid_request', error.message);
        throw error;
      }

      const outcomes = new Map<string, 'applied' | 'already_applied'>();
      if (body.apply) {
        for (const account of plan.accounts) {
          const result = await ledger.adjust(account.accountId, {
            reference: body.reference!,
            reason: body.reason ?? `re-rate of ${model.id}`,
            model: model.id,
            calls: account.calls.map((c) => ({ requestId: c.requestId, keyId: c.keyId, oldCost: c.cost, newCost: c.newCost })),
          });
          if (!result.ok) throw fromDomain(result.error);
          outcomes.set(account.accountId, result.alreadyApplied ? 'already_applied' : 'applied');
        }
        await runner.catchUpToHead();
      }

      const total = (pick: (a: AccountRerate) => bigint) => plan.accounts.reduce((sum, a) => sum + pick(a), 0n);
      return {
        object: 'rerate',
        model: model.id,
        from: body.from,
        to: body.to,
        price: body.price,
        applied: body.apply,
        reference: body.reference ?? null,
        unchanged_calls: plan.unchanged,
        calls: plan.accounts.flatMap((a) =>
          a.calls.map((c) => ({
            account_id: a.accountId,
            request_id: c.requestId,
            key_id: c.keyId,
            submitted_at: c.submittedAt,
            old_cost_usd: usd(c.cost),
            new_cost_usd: usd(c.newCost),
            difference_usd: usd(c.newCost - c.cost),
          })),
        ),
        accounts: plan.accounts.map((a) => ({
          account_id: a.accountId,
          calls: a.calls.length,
          old_cost_usd: usd(a.oldCost),
          new_cost_usd: usd(a.newCost),
          difference_usd: usd(a.newCost - a.oldCost),
          ...(body.apply ? { outcome: outcomes.get(a.accountId) } : {}),
        })),
        total: { old_cost_usd: usd(total((a) => a.oldCost)), new_cost_usd: usd(total((a) => a.newCost)), difference_usd: usd(total((a) => a.newCost - a.oldCost)) },
      };
    });
  };
}
