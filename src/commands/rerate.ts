import type { ModelConfig, SharedDiscount } from '../config/schema';
import { parseUsd } from '../money/usd';
import { CAPTURE_FACTOR } from '../upstream/capture';
import { costOf, pricingOf } from '../upstream/pricing';

/**
 * Re-rating: past calls of one model priced again at a corrected price. Finance asks for it when
 * a price was wrong for a while; the log is never rewritten: each account gets one adjustment
 * (WalletAdjusted events, see the wallet decider) for the difference, idempotent on a reference.
 *
 * This module is the pure part: what a billed call costs at a price, and the plan of a re-rate.
 */

/** A billed call as the call log shows it. `cost` is what it costs now: its capture plus any
 * earlier adjustment, so that re-rates of the same calls compose. */
export interface BilledCall {
  readonly accountId: string;
  readonly requestId: string;
  readonly keyId: string | null;
  readonly submittedAt: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  /** Input tokens written to the cache (0 on rows from before they were recorded). */
  readonly cacheWriteTokens: number;
  /** The part of them written for 1 hour (0 on rows from before lifetimes were recorded: all 5-minute, as billed). */
  readonly cacheWrite1hTokens: number;
  readonly unitCount: number | null;
  /** The built-in tool fees part of the capture (kept as billed: a re-rate prices tokens and images). */
  readonly toolFee: bigint;
  /** The hold the capture was bounded by (null on rows from before it was recorded: no bound applied). */
  readonly hold: bigint | null;
  readonly cost: bigint;
}

export interface RatedCall extends BilledCall {
  readonly newCost: bigint;
}

export interface AccountRerate {
  readonly accountId: string;
  readonly calls: readonly RatedCall[];
  readonly oldCost: bigint;
  readonly newCost: bigint;
}

export interface ReratePlan {
  /** Calls whose cost changes, grouped by account in the order they came. */
  readonly accounts: readonly AccountRerate[];
  /** Calls of the window whose cost stays the same. */
  readonly unchanged: number;
}

export class RerateError extends Error {}

/** The models a re-rate can price: token-billed text and per-image. */
export function rerateable(model: ModelConfig): boolean {
  return model.kind === 'text' || (model.kind === 'image' && model.price.per_image !== undefined);
}

/**
 * What a call costs at `model`'s price, priced as it was billed: from the token classes its row
 * records (input, cached input, cache writes at their lifetime's multiplier, output; long context and the
 * discount in force when the call was submitted as the config says) plus its built-in tool fees as
 * billed; an image call per image. Never above the bound its capture had: the hold for images, the
 * hold × CAPTURE_FACTOR for chat (src/upstream/capture.ts). At the prices in force, its cost.
 */
export function costAt(model: ModelConfig, call: BilledCall, shared: readonly SharedDiscount[] = []): bigint {
  if (model.kind === 'image') {
    if (model.price.per_image === undefined) throw new RerateError(`the price of ${model.id} has no per_image`);
    return bounded(parseUsd(model.price.per_image) * BigInt(call.unitCount ?? 0), call.hold);
  }
  if (model.kind !== 'text') throw new RerateError(`re-rating supports token-billed and per-image models, not ${model.kind} (${model.id})`);
  const tokens = costOf(
    { ...pricingOf(model, shared), toolFees: new Map() },
    {
      promptTokens: call.inputTokens,
      cachedTokens: call.cachedTokens,
      cacheWriteTokens: call.cacheWriteTokens,
      cacheWrite1hTokens: call.cacheWrite1hTokens,
      outputTokens: call.outputTokens,
      reasoningTokens: 0,
    },
    call.submittedAt,
  );
  return bounded(tokens + call.toolFee, call.hold === null ? null : call.hold * CAPTURE_FACTOR);
}

const bounded = (cost: bigint, bound: bigint | null): bigint => (bound !== null && cost > bound ? bound : cost);

/** Prices every call again at `model`'s price and keeps those whose cost changes. */
export function planRerate(model: ModelConfig, calls: readonly BilledCall[], shared: readonly SharedDiscount[] = []): ReratePlan {
  const byAccount = new Map<string, { calls: RatedCall[]; oldCost: bigint; newCost: bigint }>();
  let unchanged = 0;
  for (const call of calls) {
    const newCost = costAt(model, call, shared);
    if (newCost === call.cost) {
      unchanged += 1;
      continue;
    }
    let account = byAccount.get(call.accountId);
    if (!account) {
      account = { calls: [], oldCost: 0n, newCost: 0n };
      byAccount.set(call.accountId, account);
    }
    account.calls.push({ ...call, newCost });
    account.oldCost += call.cost;
    account.newCost += newCost;
  }
  return { accounts: [...byAccount].map(([accountId, a]) => ({ accountId, ...a })), unchanged };
}
