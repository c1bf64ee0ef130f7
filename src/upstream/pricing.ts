import { FEE_TOOLS, type Discount, type SharedDiscount, type FeeTool, type ModelConfig } from '../config/schema';
import { ceilDiv, parseUsd, UNITS_PER_USD } from '../money/usd';
import type { Usage } from './contract';

/** A model's token prices in nano-dollars per 1M tokens, and its special multipliers
 * as exact fractions over 10^9. */
export interface TokenPricing {
  readonly input: bigint;
  readonly cachedInput: bigint;
  readonly output: bigint;
  /** Cache writes that live 5 minutes (and every write a protocol reports without its lifetime). */
  readonly cacheWriteMultiplier: bigint;
  /** Cache writes that live 1 hour (Anthropic's `ephemeral_1h_input_tokens`). */
  readonly cacheWrite1hMultiplier: bigint;
  readonly longContext: { readonly thresholdTokens: number; readonly multiplier: bigint } | null;
  /** Nano-dollars per built-in tool call, by tool (`image_generation`: per image, `tool_call_fee` or else
   * the text model's `per_image`). */
  readonly toolFees: ReadonlyMap<FeeTool, bigint>;
  /** The model's own discount first, then the shared discounts that name it. */
  readonly discounts: readonly PricedDiscount[];
}

export interface PricedDiscount {
  /** Over 10^9. */
  readonly multiplier: bigint;
  /** As written in the config, for the receipt. */
  readonly written: string;
  readonly from: number | null;
  readonly until: number | null;
}

const ONE = UNITS_PER_USD;
/** The vendor's price of a 1-hour cache write, times the input price (a model that charges writes and names no 1-hour multiplier). */
export const DEFAULT_CACHE_WRITE_1H_MULTIPLIER = '2';
const PER_MILLION = 1_000_000n;

const NO_SHARED: readonly SharedDiscount[] = [];
const parsed = new WeakMap<readonly SharedDiscount[], WeakMap<ModelConfig, TokenPricing>>();

/** Parsed once per model: the catalogue (and its shared discounts) is read-only while the process runs. */
export function pricingOf(model: ModelConfig, shared: readonly SharedDiscount[] = NO_SHARED): TokenPricing {
  const byModel = parsed.get(shared) ?? parsed.set(shared, new WeakMap()).get(shared)!;
  let pricing = byModel.get(model);
  if (!pricing) {
    pricing = parsePricing(model, shared);
    byModel.set(model, pricing);
  }
  return pricing;
}

/** The discounts that apply to a model: its own, then every shared discount naming it or its vendor. */
export function discountsOf(model: ModelConfig, shared: readonly SharedDiscount[] = []): Discount[] {
  const naming = shared.filter((d) => (d.models ? d.models.includes(model.id) : d.owned_by === model.owned_by));
  return [...(model.discount ? [model.discount] : []), ...naming.map(({ multiplier, from, until }) => ({ multiplier, from, until }))];
}

function parsePricing(model: ModelConfig, shared: readonly SharedDiscount[]): TokenPricing {
  const input = parseUsd(model.price.input ?? '0');
  const cacheWriteMultiplier = model.cache_write_multiplier !== undefined ? parseUsd(model.cache_write_multiplier) : ONE;
  // A model that charges writes pays the vendor's 2× for 1-hour ones unless it says otherwise; one that
  // charges none (no multiplier) charges none for either lifetime.
  const oneHour = model.cache_write_1h_multiplier ?? (model.cache_write_multiplier !== undefined ? DEFAULT_CACHE_WRITE_1H_MULTIPLIER : undefined);
  // The image tool's images are priced like the model's own images when no fee names them.
  const fees: Partial<Record<FeeTool, string>> = { ...(model.price.per_image !== undefined ? { image_generation: model.price.per_image } : {}), ...model.price.tool_call_fee };
  return {
    input,
    cachedInput: model.price.cached_input !== undefined ? parseUsd(model.price.cached_input) : input,
    output: parseUsd(model.price.output ?? '0'),
    cacheWriteMultiplier,
    cacheWrite1hMultiplier: oneHour !== undefined ? parseUsd(oneHour) : cacheWriteMultiplier,
    longContext: model.long_context ? { thresholdTokens: model.long_context.threshold_tokens, multiplier: parseUsd(model.long_context.multiplier) } : null,
    toolFees: new Map(FEE_TOOLS.flatMap((tool) => (fees[tool] !== undefined ? [[tool, parseUsd(fees[tool])] as const] : []))),
    discounts: discountsOf(model, shared).map((d) => ({ multiplier: parseUsd(d.multiplier), written: d.multiplier, from: d.from ?? null, until: d.until ?? null })),
  };
}

/** The discount in force for a call submitted at `at` (Unix seconds): the first whose window holds it. */
export function discountAt(pricing: TokenPricing, at: number): PricedDiscount | null {
  return pricing.discounts.find((d) => (d.from === null || d.from <= at) && (d.until === null || at < d.until)) ?? null;
}

/** A call's price, and the parts its receipt shows. */
export interface Charge {
  /** What is captured: `tokens + toolFee`. */
  readonly amount: bigint;
  /** The token part, discounted when a discount is in force. */
  readonly tokens: bigint;
  /** Built-in tool calls charged (by the upstream's count) and their fees, never discounted. */
  readonly toolCalls: number;
  readonly toolFee: bigint;
  /** The discount multiplier applied, as written in the config. */
  readonly discount: string | null;
}

/** A usage's prompt split into its priced classes: cache reads, 5-minute and 1-hour writes (each
 * within what is left of the prompt), and the rest. */
export function promptClasses(usage: Usage): { uncached: bigint; cached: bigint; written5m: bigint; written1h: bigint } {
  const cached = Math.min(usage.cachedTokens, usage.promptTokens);
  const written = Math.min(usage.cacheWriteTokens, usage.promptTokens - cached);
  const written1h = Math.min(usage.cacheWrite1hTokens ?? 0, written);
  return { uncached: BigInt(usage.promptTokens - cached - written), cached: BigInt(cached), written5m: BigInt(written - written1h), written1h: BigInt(written1h) };
}

/**
 * ceil(Σ tokens × price / 10^6) over every token class (cache writes at their lifetime's multiplier, every price
 * times the long-context multiplier at or above its threshold, times the discount in force at `at`),
 * computed once and never re-rounded; plus the fixed per-call fee of each built-in tool call the
 * upstream counted (exact, so adding it after the one rounding changes nothing). Never throws on a
 * `Usage` of non-negative safe integers (what usage.ts lets through).
 */
export function chargeOf(pricing: TokenPricing, usage: Usage, at: number): Charge {
  const { uncached, cached, written5m, written1h } = promptClasses(usage);
  // Scaled by 10^9 so the cache-write multipliers stay exact.
  let scaled =
    uncached * pricing.input * ONE +
    cached * pricing.cachedInput * ONE +
    written5m * pricing.input * pricing.cacheWriteMultiplier +
    written1h * pricing.input * pricing.cacheWrite1hMultiplier +
    BigInt(usage.outputTokens) * pricing.output * ONE;
  let denominator = PER_MILLION * ONE;
  if (pricing.longContext && usage.promptTokens >= pricing.longContext.thresholdTokens) {
    scaled *= pricing.longContext.multiplier;
    denominator *= ONE;
  }
  const discount = discountAt(pricing, at);
  if (discount) {
    scaled *= discount.multiplier;
    denominator *= ONE;
  }
  const tokens = ceilDiv(scaled, denominator);
  let toolCalls = 0;
  let toolFee = 0n;
  for (const [tool, fee] of pricing.toolFees) {
    const calls = usage.toolCalls?.[tool] ?? 0;
    toolCalls += calls;
    toolFee += BigInt(calls) * fee;
  }
  return { amount: tokens + toolFee, tokens, toolCalls, toolFee, discount: discount?.written ?? null };
}

/** What the call-log row and the settlement event (the receipt) show of a charge: the built-in
 * tool calls the upstream counted as `unit_count` of `unit_type` (e.g. `web_search_call`), the fee
 * part of the cost, and the discount multiplier applied. */
export function receiptOf(usage: Usage, charge: Charge): { unit_count?: number; unit_type?: string; tool_fee?: string; discount?: string } {
  const counted = Object.entries(usage.toolCalls ?? {}).filter(([, calls]) => (calls ?? 0) > 0);
  const calls = counted.reduce((sum, [, n]) => sum + (n ?? 0), 0);
  return Object.assign(
    {},
    calls > 0 ? { unit_count: calls, unit_type: counted.length === 1 ? unitOf(counted[0]![0]) : 'tool_call' } : {},
    charge.toolFee > 0n ? { tool_fee: String(charge.toolFee) } : {},
    charge.discount !== null ? { discount: charge.discount } : {},
  );
}

/** The row's `unit_type` of one built-in tool: the image tool's units are images. */
const unitOf = (tool: string) => (tool === 'image_generation' ? 'image' : `${tool}_call`);

/** What a call costs (see `chargeOf`). */
export const costOf = (pricing: TokenPricing, usage: Usage, at: number): bigint => chargeOf(pricing, usage, at).amount;

/** The hold: the estimate priced as the worst case. A model that charges cache writes above the
 * input price may write its whole prompt to the cache, so the whole estimated prompt is held at the
 * highest write price the request can cause: the 1-hour one when it may write 1-hour entries
 * (`longCacheWrites`, ChatRequestInfo), else the 5-minute one. The discount in force at submission is
 * the one the settlement applies, so it applies here too. Tool fees are not held: how many searches a
 * call makes is not known before it runs. */
export function holdAmount(pricing: TokenPricing, estimate: Usage, at: number, longCacheWrites = false): bigint {
  const written = { ...estimate, cachedTokens: 0, cacheWriteTokens: estimate.promptTokens };
  const candidates: Usage[] = [{ ...estimate, cacheWrite1hTokens: 0 }, { ...written, cacheWrite1hTokens: 0 }];
  if (longCacheWrites) candidates.push({ ...written, cacheWrite1hTokens: estimate.promptTokens });
  return candidates.map((usage) => chargeOf(pricing, usage, at).amount).reduce((a, b) => (a > b ? a : b));
}

/** What a request's built-in tools add to its hold: one call's fee for each fee tool it names (the
 * usual answer makes one image, one search; more are billed at settlement, within the capture bound
 * of src/upstream/capture.ts, which is a multiple of this hold). */
export function builtinToolsHold(pricing: TokenPricing, builtinTools: readonly string[]): bigint {
  return [...new Set(builtinTools)].reduce((sum, tool) => sum + (pricing.toolFees.get(tool as FeeTool) ?? 0n), 0n);
}

export const MAX_ESTIMATED_OUTPUT = 32_768;

/** Pre-charge: input ≈ JSON bytes / 4; output = the explicit cap in full, else
 * min(model default, 32768), once per answer asked for (`n`, `candidateCount`: each answer
 * may reach the cap). Priced with the same function as the settlement. */
export function estimateUsage(model: ModelConfig, promptDocument: unknown, maxTokens: number | null, choices = 1): Usage {
  const bytes = Buffer.byteLength(JSON.stringify(promptDocument ?? null), 'utf8');
  const promptTokens = Math.ceil(bytes / 4);
  const outputTokens = (maxTokens ?? Math.min(model.default_max_tokens ?? MAX_ESTIMATED_OUTPUT, MAX_ESTIMATED_OUTPUT)) * choices;
  return { promptTokens, cachedTokens: 0, cacheWriteTokens: 0, outputTokens, reasoningTokens: 0 };
}

/** Output tokens of a stream that ended without a usage report: about 4 characters a token. */
export const tokensFromChars = (chars: number) => Math.ceil(chars / 4);
