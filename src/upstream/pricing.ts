import type { ModelConfig } from '../config/schema';
import { ceilDiv, parseUsd, UNITS_PER_USD } from '../money/usd';
import type { Usage } from './contract';

/** A model's token prices in nano-dollars per 1M tokens, and its special multipliers
 * as exact fractions over 10^9. */
export interface TokenPricing {
  readonly input: bigint;
  readonly cachedInput: bigint;
  readonly output: bigint;
  readonly cacheWriteMultiplier: bigint;
  readonly longContext: { readonly thresholdTokens: number; readonly multiplier: bigint } | null;
  /** A text model's `per_image`: each image its built-in image tool makes (`Usage.toolCalls.image_generation`). */
  readonly perImage: bigint;
}

const ONE = UNITS_PER_USD;
const PER_MILLION = 1_000_000n;

const parsed = new WeakMap<ModelConfig, TokenPricing>();

/** Parsed once per model: the catalogue is read-only while the process runs. */
export function pricingOf(model: ModelConfig): TokenPricing {
  let pricing = parsed.get(model);
  if (!pricing) {
    pricing = parsePricing(model);
    parsed.set(model, pricing);
  }
  return pricing;
}

function parsePricing(model: ModelConfig): TokenPricing {
  const input = parseUsd(model.price.input ?? '0');
  return {
    input,
    cachedInput: model.price.cached_input !== undefined ? parseUsd(model.price.cached_input) : input,
    output: parseUsd(model.price.output ?? '0'),
    cacheWriteMultiplier: model.cache_write_multiplier !== undefined ? parseUsd(model.cache_write_multiplier) : ONE,
    longContext: model.long_context ? { thresholdTokens: model.long_context.threshold_tokens, multiplier: parseUsd(model.long_context.multiplier) } : null,
    perImage: parseUsd(model.price.per_image ?? '0'),
  };
}

/** ceil(Σ tokens × price / 10^6) over every token class, computed once, never re-rounded. */
export function costOf(pricing: TokenPricing, usage: Usage): bigint {
  const cached = BigInt(Math.min(usage.cachedTokens, usage.promptTokens));
  const written = BigInt(Math.min(usage.cacheWriteTokens, usage.promptTokens - Number(cached)));
  const uncached = BigInt(usage.promptTokens) - cached - written;
  // Scaled by 10^9 so the cache-write multiplier stays exact.
  let scaled =
    uncached * pricing.input * ONE +
    cached * pricing.cachedInput * ONE +
    written * pricing.input * pricing.cacheWriteMultiplier +
    BigInt(usage.outputTokens) * pricing.output * ONE;
  let denominator = PER_MILLION * ONE;
  if (pricing.longContext && usage.promptTokens >= pricing.longContext.thresholdTokens) {
    scaled *= pricing.longContext.multiplier;
    denominator *= ONE;
  }
  return ceilDiv(scaled, denominator) + builtinToolCost(pricing, usage.toolCalls);
}

/** Built-in tool calls at their per-call prices (not subject to the long-context multiplier).
 * Only the image tool is priced here (`per_image`); other tools' fees are added where they are priced. */
function builtinToolCost(pricing: TokenPricing, toolCalls: Usage['toolCalls']): bigint {
  const images = toolCalls?.image_generation ?? 0;
  return Number.isSafeInteger(images) && images > 0 ? BigInt(images) * pricing.perImage : 0n;
}

/** What a request's built-in tools add to its hold: one image for the image tool (the usual answer
 * makes one; more are billed at settlement). */
export function builtinToolsHold(pricing: TokenPricing, builtinTools: readonly string[]): bigint {
  return builtinTools.includes('image_generation') ? pricing.perImage : 0n;
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
