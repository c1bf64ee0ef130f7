import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load';
import type { ModelConfig } from '../config/schema';
import type { Usage } from './contract';
import { chargeOf, costOf, discountsOf, holdAmount, pricingOf, receiptOf } from './pricing';
import { MAX_REPORTED_TOKENS } from './usage';

const RUNS = Number(process.env.FC_RUNS ?? 10_000);
const AT = 1_767_225_600; // 2026-01-01T00:00:00Z

function catalogue(yaml: string) {
  const config = parseConfig(yaml, {});
  return { config, model: (id: string) => config.models.find((m) => m.id === id)! };
}

const usage = (promptTokens: number, outputTokens: number, extra: Partial<Usage> = {}): Usage => ({
  promptTokens,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  outputTokens,
  reasoningTokens: 0,
  ...extra,
});

describe('config keys for fees and discounts', () => {
  it('reads tool_call_fee per tool, discounts with Unix or ISO times, and refuses what cannot be meant', () => {
    const { config, model } = catalogue(`
models:
  - id: a
    owned_by: v
    price: {input: "1", output: "2", tool_call_fee: {web_search: "0.01"}}
    discount: {multiplier: "0.8", from: 1767225600, until: "2026-02-01T00:00:00Z"}
discounts:
  - {owned_by: v, multiplier: "0.5"}
`);
    expect(model('a').price.tool_call_fee).toEqual({ web_search: '0.01' });
    expect(model('a').discount).toEqual({ multiplier: '0.8', from: 1_767_225_600, until: 1_769_904_000 });
    expect(config.discounts).toEqual([{ owned_by: 'v', multiplier: '0.5' }]);

    expect(() => parseConfig('models: [{id: a, price: {tool_call_fee: "0.01"}}]', {})).toThrow(/tool_call_fee/);
    expect(() => parseConfig('models: [{id: a, price: {tool_call_fee: {websearch: "0.01"}}}]', {})).toThrow(/tool_call_fee/);
    expect(() => parseConfig('models: [{id: a, discount: {multiplier: "1.2"}}]', {})).toThrow(/between 0 and 1/);
    expect(() => parseConfig('models: [{id: a, discount: {multiplier: "0.8", from: 20, until: 10}}]', {})).toThrow(/until/);
    expect(() => parseConfig('models: [{id: a, discount: {multiplier: "0.8", until: "next week"}}]', {})).toThrow(/discount\.until/);
    expect(() => parseConfig('models: [{id: a}]\ndiscounts: [{multiplier: "0.8"}]', {})).toThrow(/either owned_by or models/);
    expect(() => parseConfig('models: [{id: a}]\ndiscounts: [{multiplier: "0.8", models: [b]}]', {})).toThrow(/unknown model b/);
  });
});

describe('the price of a call', () => {
  const { config, model } = catalogue(`
models:
  - id: plain
    owned_by: v
    price: {input: "0.15", cached_input: "0.075", output: "0.60"}
  - id: searching
    owned_by: w
    price: {input: "3", output: "15", tool_call_fee: {web_search: "0.01"}}
  - id: caching
    owned_by: w
    price: {input: "3", cached_input: "0.30", output: "15"}
    cache_write_multiplier: "1.25"
  - id: promo
    owned_by: w
    price: {input: "0.0021", output: "0.60", tool_call_fee: {web_search: "0.01"}}
    long_context: {threshold_tokens: 1000, multiplier: "2"}
    discount: {multiplier: "0.7", from: ${AT}, until: ${AT + 3600}}
discounts:
  - {owned_by: w, multiplier: "0.9"}
  - {models: [plain], multiplier: "0.5", until: ${AT}}
`);
  const pricing = (id: string) => pricingOf(model(id), config.discounts);

  it('adds the fixed fee per web search the upstream counted, outside the one rounding and never discounted', () => {
    const p = pricingOf(model('searching'));
    const charge = chargeOf(p, usage(1000, 100, { toolCalls: { web_search: 3 } }), AT);
    // $3 / $15 per 1M tokens are 3000 / 15000 nano-dollars a token: 4.5M of tokens, 3 × $0.01 of searches.
    expect(charge).toEqual({ amount: 4_500_000n + 30_000_000n, tokens: 4_500_000n, toolCalls: 3, toolFee: 30_000_000n, discount: null });
    expect(receiptOf(usage(1000, 100, { toolCalls: { web_search: 3 } }), charge)).toEqual({ unit_count: 3, unit_type: 'web_search_call', tool_fee: '30000000' });
    // A model without a fee shows the count and charges nothing for it.
    const free = chargeOf(pricingOf(model('plain')), usage(1000, 100, { toolCalls: { web_search: 2 } }), AT);
    expect(free.toolFee).toBe(0n);
    expect(receiptOf(usage(1000, 100, { toolCalls: { web_search: 2 } }), free)).toEqual({ unit_count: 2, unit_type: 'web_search_call' });

    const discounted = chargeOf(pricing('searching'), usage(1000, 100, { toolCalls: { web_search: 3 } }), AT);
    expect(discounted).toEqual({ amount: 4_050_000n + 30_000_000n, tokens: 4_050_000n, toolCalls: 3, toolFee: 30_000_000n, discount: '0.9' });
  });

  it('applies the discount in force at submission, inside the one rounding: the model’s own first, then a shared one naming its vendor', () => {
    // $0.0021 per 1M tokens is 2.1 nano-dollars a token.
    const u = usage(1, 0);
    expect(costOf(pricingOf(model('promo')), u, AT)).toBe(2n); // ceil(2.1 × 0.7 = 1.47); rounding first would give ceil(3 × 0.7) = 3
    expect(costOf(pricing('promo'), u, AT + 3599)).toBe(2n);
    expect(costOf(pricing('promo'), usage(10, 0), AT)).toBe(15n); // ceil(14.7)
    // Its own window over: the shared discount's 0.9.
    expect(costOf(pricing('promo'), usage(10, 0), AT + 3600)).toBe(19n); // ceil(18.9)
    expect(chargeOf(pricing('promo'), u, AT + 3600).discount).toBe('0.9');
    // Before its own window: the shared one's too.
    expect(chargeOf(pricing('promo'), u, AT - 1).discount).toBe('0.9');
    // A shared discount by model list, until a moment (exclusive): 7 × 150 + 3 × 600 = 2850 nano-dollars.
    expect(chargeOf(pricing('plain'), usage(7, 3), AT - 1)).toMatchObject({ discount: '0.5', amount: 1425n });
    expect(chargeOf(pricing('plain'), usage(7, 3), AT)).toMatchObject({ discount: null, amount: 2850n });
    // Long context and the discount, still one rounding: 1000 × 2.1 × 2 × 0.7 = 2940 nano-dollars.
    expect(costOf(pricing('promo'), usage(1000, 0), AT)).toBe(2940n);
    expect(discountsOf(model('promo'), config.discounts).map((d) => d.multiplier)).toEqual(['0.7', '0.9']);
  });

  it('holds the whole estimated prompt at the cache-write price for a model that charges cache writes more', () => {
    const estimate = usage(1000, 100);
    // 1000 × 3000 × 1.25 + 100 × 15000 nano-dollars (the prompt at the input price alone: 4.5M).
    expect(holdAmount(pricingOf(model('caching')), estimate, AT)).toBe(5_250_000n);
    expect(holdAmount(pricingOf(model('searching')), estimate, AT)).toBe(4_500_000n);
    // The hold applies the discount the settlement will.
    expect(holdAmount(pricing('caching'), estimate, AT)).toBe(4_725_000n);
  });

  it('never throws on valid usage, and the hold covers any settlement within the estimate (DESIGN, Money)', () => {
    const count = fc.integer({ min: 0, max: MAX_REPORTED_TOKENS });
    fc.assert(
      fc.property(
        fc.constantFrom('plain', 'searching', 'caching', 'promo'),
        fc.record({ prompt: count, output: count }),
        fc.record({
          prompt: fc.double({ min: 0, max: 1, noNaN: true }),
          cached: fc.double({ min: 0, max: 1, noNaN: true }),
          written: fc.double({ min: 0, max: 1, noNaN: true }),
          oneHour: fc.double({ min: 0, max: 1, noNaN: true }),
          output: fc.double({ min: 0, max: 1, noNaN: true }),
        }),
        fc.integer({ min: AT - 10_000, max: AT + 10_000 }),
        // Whether the request may write 1-hour cache entries: only then may the settlement bill some.
        fc.boolean(),
        (id, estimate, share, at, longWrites) => {
          const p = pricing(id);
          const hold = holdAmount(p, usage(estimate.prompt, estimate.output), at, longWrites);
          const prompt = Math.floor(estimate.prompt * share.prompt);
          const cached = Math.floor(prompt * share.cached);
          const written = Math.floor((prompt - cached) * share.written);
          const oneHour = longWrites ? Math.floor(written * share.oneHour) : 0;
          const actual = usage(prompt, Math.floor(estimate.output * share.output), { cachedTokens: cached, cacheWriteTokens: written, cacheWrite1hTokens: oneHour });
          const charge = chargeOf(p, actual, at);
          expect(charge.amount).toBeGreaterThanOrEqual(0n);
          expect(charge.tokens).toBeLessThanOrEqual(hold);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('the catalogue stays undiscounted', () => {
  it('keeps the listed price of a discounted model', () => {
    const { model } = catalogue('models: [{id: a, price: {input: "1"}, discount: {multiplier: "0.5"}}]');
    expect((model('a') as ModelConfig).price).toEqual({ input: '1' });
  });
});
