import type { FastifyRequest } from 'fastify';
import type { Ledger } from '../../commands/ledger';
import { spendCapRefusal } from '../../commands/wallet/decider';
import type { ModelRegistry } from '../../config/registry';
import type { ModelConfig } from '../../config/schema';
import type { TaskBilling } from '../../events/catalog';
import { parseUsd } from '../../money/usd';
import { callableModel, rejectCall, type CallFacts } from '../billable-call';
import { GatewayError, type ErrorCode } from '../errors';

// What the media endpoints billed by the call (music, its follow-ups, transcripts) share.

export interface CallPlan {
  readonly reserved: bigint;
  readonly billing: TaskBilling;
  readonly basis: number;
}

/** `per_call`: one call reserved, one call settled when delivered (never more: capped). A model without
 * the price is free. */
export function perCallPlan(model: ModelConfig): CallPlan {
  const price = parseUsd(model.price.per_call ?? '0');
  return { reserved: price, billing: { unit: 'call', price, per: 1, cap: true }, basis: 1 };
}

/** A call's facts, and its refusal before the hold: a `rejected` call-log row (unit_type call) and the error. */
export function perCall(deps: { readonly ledger: Ledger; readonly now: () => number }, request: FastifyRequest, endpoint: string) {
  const facts: CallFacts = {
    request,
    endpoint,
    startedAt: performance.now(),
    submittedAt: deps.now(),
    model: String((request.body as { model?: unknown } | null)?.model ?? ''),
    attempts: 0,
    channelId: null,
  };
  const reject = (code: ErrorCode, message: string): never => rejectCall(deps.ledger, facts, code, message, { unit_type: 'call' });
  return { facts, reject };
}

/**
 * Whether the replaying key may receive a stored answer (an Idempotency-Key replay): the refusal a new
 * call of this key would meet, its allow-list and its spend cap for one call of the model.
 */
export function perCallReplayRefusal(registry: ModelRegistry, request: FastifyRequest, modelId: string): GatewayError | null {
  const caller = request.caller!;
  const model = callableModel(registry, caller.key.settings.allowed_models, modelId);
  if ('code' in model) return new GatewayError(model.code, model.message);
  const capped = spendCapRefusal(caller.wallet, caller.keyId, caller.key.settings.spend_cap, perCallPlan(model).reserved);
  return capped ? new GatewayError('quota_exceeded', capped.message) : null;
}
