import type { ModelConfig, SharedDiscount } from '../config/schema';
import { formatUsd, parseUsd } from '../money/usd';
import type { LogRow } from '../projections/call-log/queries';
import { chargeOf, pricingOf, promptClasses } from '../upstream/pricing';

/** One line of "why was I charged": what was counted, at what price, and what it came to. */
export interface ReceiptLine {
  readonly label: string;
  readonly quantity: string;
  readonly price: string;
  /** Exact, possibly with more than 9 decimals before the one rounding. */
  readonly amount: string;
}

export interface Receipt {
  readonly lines: readonly ReceiptLine[];
  /** Multipliers applied to the token sum (long context, discount), as written in the config. */
  readonly multipliers: readonly string[];
  /** The price list's result for this row, rounded up to the nano-dollar once. */
  readonly computed: string;
  /** What the ledger captured (plus re-rates). */
  readonly charged: string;
  /** Whether the two agree; they may not when the price changed since, or for prompt-cache writes of
   * a call from before the row kept their count. */
  readonly matches: boolean;
  readonly note: string | null;
}

/** A decimal of nano-dollars scaled by 10^`scale` (tokens × price per 1M: 6; times a multiplier over
 * 10^9 as well: 15), written exactly. */
function exactScaled(scaled: bigint, scale = 6): string {
  const divisor = 10n ** BigInt(scale);
  const whole = scaled / divisor;
  const rest = scaled % divisor;
  const base = formatUsd(whole);
  if (rest === 0n) return base;
  const [units, fraction = ''] = base.split('.');
  const digits = (fraction.padEnd(9, '0') + rest.toString().padStart(scale, '0')).replace(/0+$/, '');
  return `${units}.${digits}`;
}

/** A multiplier over 10^9 as a plain decimal (`1.25`, `2`). */
const formatMultiplier = (multiplier: bigint): string => formatUsd(multiplier).replace(/\.?0+$/, '');

/**
 * The price arithmetic of a call, from its row and the model's price list today: token classes
 * times their price per million, the multipliers, one rounding up, the built-in tool fees. Models
 * priced per unit show units times the unit price; anything else shows the captured amount only.
 */
export function receiptOf(model: ModelConfig | undefined, row: LogRow, shared: readonly SharedDiscount[]): Receipt {
  const captured = parseUsd(row.cost_usd) + parseUsd(row.adjustment_usd);
  const charged = formatUsd(captured);
  if (row.status === 'rejected') return { lines: [], multipliers: [], computed: '0.00', charged, matches: captured === 0n, note: 'A rejected call is never charged: nothing was held.' };
  if (!model) return { lines: [], multipliers: [], computed: charged, charged, matches: true, note: 'The model is no longer in the price list; the ledger shows what was captured.' };
  if (model.kind === 'text') {
    const pricing = pricingOf(model, shared);
    const toolCalls = row.unit_count && row.unit_type ? { [row.unit_type === 'image' ? 'image_generation' : row.unit_type.replace(/_call$/, '')]: row.unit_count } : undefined;
    const usage = {
      promptTokens: row.input_tokens,
      cachedTokens: row.cached_tokens,
      cacheWriteTokens: row.cache_write_tokens,
      cacheWrite1hTokens: row.cache_write_1h_tokens,
      outputTokens: row.output_tokens,
      reasoningTokens: 0,
      ...(toolCalls ? { toolCalls } : {}),
    };
    const { uncached, cached, written5m, written1h } = promptClasses(usage);
    const line = (label: string, tokens: bigint, price: bigint): ReceiptLine => ({
      label,
      quantity: `${tokens} tokens`,
      price: `$${formatUsd(price)} / 1M`,
      amount: `$${exactScaled(tokens * price)}`,
    });
    // A cache write's price is the input price times its lifetime's multiplier, exact to below the nano-dollar.
    const write = (label: string, tokens: bigint, multiplier: bigint): ReceiptLine => ({
      label,
      quantity: `${tokens} tokens`,
      price: `$${exactScaled(pricing.input * multiplier, 9)} / 1M (input × ${formatMultiplier(multiplier)})`,
      amount: `$${exactScaled(tokens * pricing.input * multiplier, 15)}`,
    });
    const lines = [
      line('Input', uncached, pricing.input),
      ...(cached > 0n ? [line('Cached input', cached, pricing.cachedInput)] : []),
      ...(written5m > 0n ? [write('Cache writes (5 minutes)', written5m, pricing.cacheWriteMultiplier)] : []),
      ...(written1h > 0n ? [write('Cache writes (1 hour)', written1h, pricing.cacheWrite1hMultiplier)] : []),
      line('Output', BigInt(row.output_tokens), pricing.output),
    ];
    const charge = chargeOf(pricing, usage, row.submitted_at);
    const multipliers: string[] = [];
    if (pricing.longContext && row.input_tokens >= pricing.longContext.thresholdTokens)
      multipliers.push(`long context (≥ ${pricing.longContext.thresholdTokens} input tokens) × ${formatUsd(pricing.longContext.multiplier)}`);
    if (charge.discount !== null) multipliers.push(`discount × ${charge.discount}`);
    if (charge.toolFee > 0n) lines.push({ label: `Built-in tools (${row.unit_type})`, quantity: `${charge.toolCalls} calls`, price: 'per call', amount: `$${formatUsd(charge.toolFee)}` });
    return {
      lines,
      multipliers,
      computed: formatUsd(charge.amount),
      charged,
      matches: charge.amount === captured,
      note:
        charge.amount === captured
          ? null
          : 'The price list changed since this call, or the call predates the record of its prompt-cache writes (billed at the cache-write multiplier); the ledger is what counts.',
    };
  }
  const unitPrice = model.price.per_image ?? null;
  if (unitPrice !== null && row.unit_count !== null) {
    const amount = parseUsd(unitPrice) * BigInt(row.unit_count);
    return {
      lines: [{ label: row.unit_type ?? 'units', quantity: `${row.unit_count}`, price: `$${unitPrice} each`, amount: `$${formatUsd(amount)}` }],
      multipliers: [],
      computed: formatUsd(amount),
      charged,
      matches: amount === captured,
      note: amount === captured ? null : 'The price list changed since this call; the ledger is what counts.',
    };
  }
  return {
    lines: row.unit_count !== null ? [{ label: row.unit_type ?? 'units', quantity: `${row.unit_count}`, price: 'see the model list', amount: `$${charged}` }] : [],
    multipliers: [],
    computed: charged,
    charged,
    matches: true,
    note: `${model.kind} calls are priced per ${row.unit_type ?? 'unit'} by the model's price list; the ledger shows what was captured.`,
  };
}
