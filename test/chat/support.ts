import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

export const PRICES = { input: '1.00', cached_input: '0.50', output: '2.00' } as const;

/** A catalogue with one model per chat protocol, each with a primary and a backup
 * channel on the simulator (distinguished by path prefix and key). */
export function chatConfig(sim: Simulator): GatewayConfig {
  const model = (id: string, extra: object = {}) => ({
    id,
    owned_by: 'test',
    kind: 'text' as const,
    aliases: [`${id}-2024`],
    callable: true,
    endpoint_type: null,
    default_max_tokens: 1000,
    capabilities: [],
    price: { ...PRICES },
    ...extra,
  });
  const channel = (id: string, protocol: 'chat-completions' | 'messages' | 'responses' | 'generate-content', models: string[], priority: number) => ({
    id,
    protocol,
    base_url: `${sim.url}/${id}`,
    api_key: `key-${id}`,
    group: 'default',
    priority,
    weight: 1,
    models: Object.fromEntries(models.map((m) => [m, `${m}-upstream`])),
    tools: protocol === 'chat-completions' ? ['web_search'] : [],
    // These tests are about native passthrough: a model without a channel of a protocol has none.
    translation: false,
  });
  return {
    models: [
      model('chat-model'),
      model('msg-model', { cache_write_multiplier: '1.25' }),
      model('resp-model'),
      model('gem-model'),
      model('long-model', { long_context: { threshold_tokens: 200, multiplier: '2' } }),
      model('orphan-model'),
      model('placeholder', { callable: false }),
      { ...model('img-model'), kind: 'image' as const, endpoint_type: 'images_generations', price: { per_image: '0.04' } },
    ],
    channels: [
      channel('cc-a', 'chat-completions', ['chat-model', 'long-model'], 0),
      channel('cc-b', 'chat-completions', ['chat-model', 'long-model'], 1),
      channel('cc-c', 'chat-completions', ['chat-model'], 2),
      channel('msg-a', 'messages', ['msg-model'], 0),
      channel('msg-b', 'messages', ['msg-model'], 1),
      channel('resp-a', 'responses', ['resp-model'], 0),
      channel('resp-b', 'responses', ['resp-model'], 1),
      channel('gem-a', 'generate-content', ['gem-model'], 0),
      channel('gem-b', 'generate-content', ['gem-model'], 1),
    ],
  };
}

export type ChatHarness = SimulatedGateway;

export function startChatHarness(options: { chatTimeoutMs?: number } = {}): Promise<ChatHarness> {
  return startSimulatedGateway(chatConfig, options);
}

/** nano-dollars of a usage at PRICES ($1 / $0.50 / $2 per 1M), rounded up once. */
export function expectedCost(prompt: number, cached: number, output: number, cacheWrite = 0, writeMultiplier = 1.25): bigint {
  const scaled = BigInt(prompt - cached - cacheWrite) * 1000n * 1000n + BigInt(cached) * 500n * 1000n + BigInt(cacheWrite) * BigInt(Math.round(writeMultiplier * 1000)) * 1000n + BigInt(output) * 2000n * 1000n;
  // prices in nano-dollars per token are 1000 / 500 / 2000; scaled by 1000 for the multiplier
  return (scaled + 999n) / 1000n;
}
