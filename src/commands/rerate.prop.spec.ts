/**
 * Issue 31, item 7c: a re-rate at the prices in force changes nothing. A call billed as the relay and
 * the image endpoints bill it (tool fees, cache writes, long context, discounts, the capture bound;
 * images capped at their hold) is re-priced at the same price to what it cost.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbitraryTextModel } from '../upstream/text-model.arbitrary';
import type { ModelConfig } from '../config/schema';
import { parseUsd } from '../money/usd';
import { boundedCapture } from '../upstream/capture';
import { chargeOf, pricingOf } from '../upstream/pricing';
import { planRerate, type BilledCall } from './rerate';

const AT = 1_700_000_000;
const price = fc.integer({ min: 0, max: 100_000 }).map((cents) => (cents / 100).toFixed(2));

const textModel = arbitraryTextModel(100_000);

const tokens = fc.nat({ max: 2_000_000 });

describe('a re-rate at the prices in force', () => {
  it('changes no chat call: tool fees, cache writes and the capture bound kept', () => {
    fc.assert(
      fc.property(
        textModel,
        fc.record({ prompt: tokens, cached: tokens, written: tokens, oneHour: tokens, output: tokens, searches: fc.nat({ max: 50 }) }),
        fc.bigInt({ min: 1n, max: 10n ** 11n }),
        (model, u, hold) => {
          const cached = Math.min(u.cached, u.prompt);
          const written = Math.min(u.written, u.prompt - cached);
          const oneHour = Math.min(u.oneHour, written);
          const usage = { promptTokens: u.prompt, cachedTokens: cached, cacheWriteTokens: written, cacheWrite1hTokens: oneHour, outputTokens: u.output, reasoningTokens: 0, ...(u.searches > 0 ? { toolCalls: { web_search: u.searches } } : {}) };
          const charge = chargeOf(pricingOf(model), usage, AT);
          const call: BilledCall = {
            accountId: 'a',
            requestId: 'r',
            keyId: null,
            submittedAt: AT,
            inputTokens: u.prompt,
            outputTokens: u.output,
            cachedTokens: cached,
            cacheWriteTokens: written,
            cacheWrite1hTokens: oneHour,
            unitCount: u.searches > 0 ? u.searches : null,
            toolFee: charge.toolFee,
            hold,
            cost: boundedCapture(charge.amount, hold).captured,
          };
          const plan = planRerate(model, [call]);
          expect(plan).toEqual({ accounts: [], unchanged: 1 });
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('prices 1-hour cache writes at the corrected multiplier, from the split the call record kept', () => {
    const sonnet = (oneHour?: string) =>
      ({ id: 'sonnet', owned_by: 'anthropic', kind: 'text', price: { input: '3', cached_input: '0.30', output: '15' }, cache_write_multiplier: '1.25', ...(oneHour ? { cache_write_1h_multiplier: oneHour } : {}) }) as ModelConfig;
    // 2095 input, 10000 read, 1024 written for 5 minutes and 5328 for 1 hour, 503 output, billed while the
    // 1-hour multiplier was wrongly set to 1.25: 2095 × 3000 + 10000 × 300 + 6352 × 3750 + 503 × 15000.
    const billed = 6_285_000n + 3_000_000n + 23_820_000n + 7_545_000n;
    const call: BilledCall = {
      accountId: 'a',
      requestId: 'r',
      keyId: null,
      submittedAt: AT,
      inputTokens: 18_447,
      outputTokens: 503,
      cachedTokens: 10_000,
      cacheWriteTokens: 6352,
      cacheWrite1hTokens: 5328,
      unitCount: null,
      toolFee: 0n,
      hold: null,
      cost: billed,
    };
    expect(planRerate(sonnet('1.25'), [call])).toEqual({ accounts: [], unchanged: 1 });
    // At the vendor's 2× (the default): 5328 more × 2250.
    const plan = planRerate(sonnet(), [call]);
    expect(plan.accounts).toEqual([{ accountId: 'a', calls: [{ ...call, newCost: billed + 11_988_000n }], oldCost: billed, newCost: billed + 11_988_000n }]);
    // A call recorded before the split (no 1-hour writes known) re-rates as it was billed: every write at 5 minutes.
    expect(planRerate(sonnet(), [{ ...call, cacheWrite1hTokens: 0 }])).toEqual({ accounts: [], unchanged: 1 });
  });

  it('changes no image call, one capped at its hold included', () => {
    fc.assert(
      fc.property(price, fc.nat({ max: 10 }), fc.bigInt({ min: 0n, max: 10n ** 11n }), (perImage, images, hold) => {
        const model = { id: 'img', owned_by: 'test', kind: 'image', aliases: [], callable: true, endpoint_type: 'images_generations', capabilities: [], price: { per_image: perImage } } as unknown as ModelConfig;
        const priced = parseUsd(perImage) * BigInt(images);
        const call: BilledCall = {
          accountId: 'a',
          requestId: 'r',
          keyId: null,
          submittedAt: AT,
          inputTokens: 0,
          outputTokens: 0,
          cachedTokens: 0,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          unitCount: images,
          toolFee: 0n,
          hold,
          cost: priced > hold ? hold : priced,
        };
        expect(planRerate(model, [call])).toEqual({ accounts: [], unchanged: 1 });
      }),
      { numRuns: 500 },
    );
  });
});
