import type { FastifyRequest } from 'fastify';
import type { Ledger } from '../../../commands/ledger';
import type { ModelRegistry } from '../../../config/registry';
import type { ModelConfig } from '../../../config/schema';
import type { TaskBilling } from '../../../events/catalog';
import { parseUsd } from '../../../money/usd';
import { beginCall, callableModel, replayRefusal } from '../../billable-call';
import type { GatewayError } from '../../errors';

// What the media endpoints billed by the call (music, its follow-ups, transcripts) share.

export interface PerCallPlan {
  readonly reserved: bigint;
  readonly billing: TaskBilling;
  readonly basis: number;
}

/** `per_call`: one call reserved, one call settled when delivered (never more: capped). A model without
 * the price is free. */
export function perCallPlan(model: ModelConfig): PerCallPlan {
  const price = parseUsd(model.price.per_call ?? '0');
  return { reserved: price, billing: { unit: 'call', price, per: 1, cap: true }, basis: 1 };
}

/** A per-call call's facts, and its refusal before the hold (a `rejected` row of unit_type call). */
export function perCall(deps: { readonly ledger: Ledger; readonly now: () => number }, request: FastifyRequest, endpoint: string) {
  return beginCall(deps.ledger, deps.now, request, endpoint, 'call');
}

/**
 * Whether the replaying key may receive a stored answer (an Idempotency-Key replay): the refusal a new
 * call of this key would meet, its allow-list and its spend cap for one call of the model.
 */
export function perCallReplayRefusal(registry: ModelRegistry, request: FastifyRequest, modelId: string): GatewayError | null {
  const caller = request.caller!;
  return replayRefusal(caller, callableModel(registry, caller.key.settings.allowed_models, modelId), (model) => perCallPlan(model).reserved);
}
