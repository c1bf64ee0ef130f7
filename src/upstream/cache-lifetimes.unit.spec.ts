/**
 * Issue 36, item 2: cache writes priced by lifetime. Anthropic reports its writes split into 5-minute and
 * 1-hour ones (`usage.cache_creation`); the 5-minute ones cost `cache_write_multiplier` × input, the
 * 1-hour ones `cache_write_1h_multiplier` × input (the vendor's 2× by default). Every amount below is
 * computed by hand from the prices in the catalogue.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load';
import { clampUsage } from './capture';
import type { ChatRequestInfo, Usage } from './contract';
import { chargeOf, estimateUsage, holdAmount, pricingOf } from './pricing';
import { messages, readAnthropicUsage } from './protocols/messages';
import { usageOut } from './translate/messages-answer';

const AT = 1_767_225_600;

const { model } = (() => {
  const config = parseConfig(
    `
models:
  - id: sonnet
    owned_by: anthropic
    price: {input: "3", cached_input: "0.30", output: "15"}
    cache_write_multiplier: "1.25"
  - id: tuned
    owned_by: anthropic
    price: {input: "0.0021", output: "1"}
    cache_write_multiplier: "1.25"
    cache_write_1h_multiplier: "3.5"
  - id: free-writes
    owned_by: other
    price: {input: "1", output: "1"}
`,
    {},
  );
  return { model: (id: string) => config.models.find((m) => m.id === id)! };
})();

/** A usage block as Anthropic's Messages API returns it (a Claude Code turn with a 1-hour system prompt cache). */
const RECORDED = {
  input_tokens: 2095,
  cache_creation_input_tokens: 6352,
  cache_read_input_tokens: 10_000,
  cache_creation: { ephemeral_5m_input_tokens: 1024, ephemeral_1h_input_tokens: 5328 },
  output_tokens: 503,
  service_tier: 'standard',
};

describe('cache writes by lifetime, from a recorded Anthropic usage block', () => {
  it('reads the split: the writes are part of the prompt, the 1-hour ones part of the writes', () => {
    expect(readAnthropicUsage(RECORDED)).toEqual({
      promptTokens: 2095 + 10_000 + 6352,
      cachedTokens: 10_000,
      cacheWriteTokens: 6352,
      cacheWrite1hTokens: 5328,
      outputTokens: 503,
      reasoningTokens: 0,
    });
  });

  it('bills 5-minute writes at 1.25 × input and 1-hour writes at 2 × input', () => {
    const usage = readAnthropicUsage(RECORDED) as Usage;
    // $3 / $0.30 / $15 per 1M are 3000 / 300 / 15000 nano-dollars a token:
    //   2095 uncached × 3000            =  6 285 000
    //   10000 read × 300                =  3 000 000
    //   1024 5-minute writes × 3750     =  3 840 000
    //   5328 1-hour writes × 6000       = 31 968 000
    //   503 output × 15000              =  7 545 000
    expect(chargeOf(pricingOf(model('sonnet')), usage, AT).amount).toBe(52_638_000n);
    // Every write at the 5-minute price (what one multiplier billed) would undercharge by 5328 × 2250.
    expect(chargeOf(pricingOf(model('sonnet')), { ...usage, cacheWrite1hTokens: 0 }, AT).amount).toBe(52_638_000n - 11_988_000n);
  });

  it('takes writes without a split as 5-minute ones, and a split larger than the total over it', () => {
    const { cache_creation: _split, ...older } = RECORDED;
    expect(readAnthropicUsage(older)).toMatchObject({ cacheWriteTokens: 6352 });
    expect((readAnthropicUsage(older) as Usage).cacheWrite1hTokens).toBeUndefined();
    // 6352 written, of which 1024 for 5 minutes: the other 5328 are not named and are billed as 5-minute writes.
    expect(readAnthropicUsage({ ...RECORDED, cache_creation: { ephemeral_5m_input_tokens: 1024 } })).toMatchObject({ cacheWriteTokens: 6352 });
    // A split of 7000 + 5328 over a total of 6352: the split is believed, and the prompt grows with it.
    expect(readAnthropicUsage({ ...RECORDED, cache_creation: { ephemeral_5m_input_tokens: 7000, ephemeral_1h_input_tokens: 5328 } })).toMatchObject({
      promptTokens: 2095 + 10_000 + 12_328,
      cacheWriteTokens: 12_328,
      cacheWrite1hTokens: 5328,
    });
    expect(readAnthropicUsage({ ...RECORDED, cache_creation: { ephemeral_1h_input_tokens: -1 } })).toEqual({ invalid: 'cache_creation.ephemeral_1h_input_tokens is negative (-1)' });
  });

  it('rounds once over every class, with a configured 1-hour multiplier', () => {
    // $0.0021 per 1M is 2.1 nano-dollars a token: 1 × 2.1 + 1 × 2.1 × 1.25 + 1 × 2.1 × 3.5 = 12.075 → 13
    // (each class rounded on its own would give 3 + 3 + 8 = 14).
    const usage: Usage = { promptTokens: 3, cachedTokens: 0, cacheWriteTokens: 2, cacheWrite1hTokens: 1, outputTokens: 0, reasoningTokens: 0 };
    expect(chargeOf(pricingOf(model('tuned')), usage, AT).amount).toBe(13n);
    // A model that charges no writes charges none for either lifetime: 3 × 1000.
    expect(chargeOf(pricingOf(model('free-writes')), usage, AT).amount).toBe(3000n);
  });

  it('reads the split from a stream: message_start has it, message_delta does not repeat it', () => {
    const observer = messages.observe({} as ChatRequestInfo, {});
    const { output_tokens: _o, ...input } = RECORDED;
    observer.onEvent({ event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { usage: { ...input, output_tokens: 1 } } }) });
    observer.onEvent({
      event: 'message_delta',
      data: JSON.stringify({ type: 'message_delta', usage: { input_tokens: 2095, cache_creation_input_tokens: 6352, cache_read_input_tokens: 10_000, output_tokens: 503 } }),
    });
    expect(observer.usage()).toEqual(readAnthropicUsage(RECORDED));
  });

  it('keeps the split within the writes when the usage is clamped, and shows it to a Messages client', () => {
    const usage = readAnthropicUsage(RECORDED) as Usage;
    expect(clampUsage(usage, { promptTokens: 12_000, outputTokens: 1000 })).toMatchObject({ promptTokens: 12_000, cachedTokens: 10_000, cacheWriteTokens: 2000, cacheWrite1hTokens: 2000 });
    expect(usageOut(usage)).toEqual({
      input_tokens: 2095,
      cache_creation_input_tokens: 6352,
      cache_read_input_tokens: 10_000,
      cache_creation: { ephemeral_5m_input_tokens: 1024, ephemeral_1h_input_tokens: 5328 },
      output_tokens: 503,
    });
  });
});

describe('the hold of a request that may write the cache', () => {
  const body = (cacheControl: Record<string, unknown>) => ({
    model: 'sonnet',
    max_tokens: 100,
    system: [{ type: 'text', text: 'You are a coding agent.', cache_control: cacheControl }],
    messages: [{ role: 'user', content: 'hi' }],
  });
  const info = (b: unknown) => messages.inspect(b, {}) as ChatRequestInfo;

  it('knows a request that asks for 1-hour entries, wherever it marks them', () => {
    expect(info(body({ type: 'ephemeral', ttl: '1h' })).longCacheWrites).toBe(true);
    expect(info(body({ type: 'ephemeral' })).longCacheWrites).toBeUndefined();
    expect(info(body({ type: 'ephemeral', ttl: '5m' })).longCacheWrites).toBeUndefined();
    const inToolResult = {
      model: 'sonnet',
      max_tokens: 10,
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '1h' } }] }] }],
    };
    expect(info(inToolResult).longCacheWrites).toBe(true);
    const onTool = { model: 'sonnet', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 't', input_schema: {}, cache_control: { type: 'ephemeral', ttl: '1h' } }] };
    expect(info(onTool).longCacheWrites).toBe(true);
    expect(info({ model: 'sonnet', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], cache_control: { type: 'ephemeral', ttl: '1h' } }).longCacheWrites).toBe(true);
  });

  it('holds the whole prompt at the 1-hour price when 1-hour writes are asked for, else at the 5-minute price', () => {
    const pricing = pricingOf(model('sonnet'));
    const estimate = estimateUsage(model('sonnet'), { system: 'x' }, 100); // the prompt document's 14 bytes: 4 tokens
    expect(estimate.promptTokens).toBe(4);
    // 4 × 3000 × 2 + 100 × 15000, and 4 × 3000 × 1.25 + 100 × 15000.
    expect(holdAmount(pricing, estimate, AT, true)).toBe(24_000n + 1_500_000n);
    expect(holdAmount(pricing, estimate, AT)).toBe(15_000n + 1_500_000n);
    // A model that charges no writes holds the prompt at the input price either way.
    expect(holdAmount(pricingOf(model('free-writes')), estimate, AT, true)).toBe(4000n + 100_000n);
  });
});
