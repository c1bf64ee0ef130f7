import fc from 'fast-check';
import type { ModelConfig } from '../config/schema';

/**
 * Test data for the property specs of chat billing (capture, re-rating): a text model with any of the
 * price features a chat call is billed by — cached input, a tool fee, cache writes (5-minute and 1-hour), a long-context tier,
 * a discount, a context window, a default output cap. Not imported by the gateway.
 */
export function arbitraryTextModel(maxCents = 200_000): fc.Arbitrary<ModelConfig> {
  const price = fc.integer({ min: 0, max: maxCents }).map((cents) => (cents / 100).toFixed(2));
  return fc
    .record({
      input: price,
      output: price,
      cached: fc.option(price, { nil: undefined }),
      fee: fc.option(price, { nil: undefined }),
      cacheWrite: fc.option(fc.constantFrom('1.25', '2'), { nil: undefined }),
      cacheWrite1h: fc.option(fc.constantFrom('2', '1.5', '3.125'), { nil: undefined }),
      longContext: fc.option(fc.record({ threshold_tokens: fc.integer({ min: 1, max: 300_000 }), multiplier: fc.constantFrom('2', '1.5') }), { nil: undefined }),
      discount: fc.option(fc.constantFrom('0.5', '0.8'), { nil: undefined }),
      contextWindow: fc.option(fc.integer({ min: 1000, max: 2_000_000 }), { nil: undefined }),
      defaultMax: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }),
    })
    .map(
      (m): ModelConfig =>
        ({
          id: 'm',
          owned_by: 'test',
          kind: 'text',
          aliases: [],
          callable: true,
          endpoint_type: null,
          capabilities: [],
          price: { input: m.input, output: m.output, ...(m.cached ? { cached_input: m.cached } : {}), ...(m.fee ? { tool_call_fee: { web_search: m.fee } } : {}) },
          ...(m.cacheWrite ? { cache_write_multiplier: m.cacheWrite } : {}),
          ...(m.cacheWrite1h ? { cache_write_1h_multiplier: m.cacheWrite1h } : {}),
          ...(m.longContext ? { long_context: m.longContext } : {}),
          ...(m.discount ? { discount: { multiplier: m.discount } } : {}),
          ...(m.contextWindow ? { context_window: m.contextWindow } : {}),
          ...(m.defaultMax ? { default_max_tokens: m.defaultMax } : {}),
        }) as ModelConfig,
    );
}
