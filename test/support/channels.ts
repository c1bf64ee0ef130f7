import type { ChannelConfig, ChatProtocol } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';

/** A channel on the simulator (under its own path prefix and key) serving `models` as
 * `<model>-upstream`; `extra` sets or overrides any field (tools, translation, priority, group). */
export function simulatorChannel(sim: Simulator, id: string, protocol: ChatProtocol, models: readonly string[], extra: Partial<ChannelConfig> = {}) {
  return {
    id,
    protocol,
    base_url: `${sim.url}/${id}`,
    api_key: `key-${id}`,
    group: 'default',
    priority: 0,
    weight: 1,
    models: Object.fromEntries(models.map((m) => [m, `${m}-upstream`])),
    tools: [] as string[],
    ...extra,
  };
}

/** A chat model of the catalogue with the schema's defaults (100 output tokens by default, 1 / 2 USD per 1M
 * tokens); `extra` sets or overrides any field (price, fallbacks, context_window). */
export function textModel(id: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    owned_by: 'test',
    kind: 'text' as const,
    aliases: [] as string[],
    callable: true,
    endpoint_type: null,
    default_max_tokens: 100,
    capabilities: [] as string[],
    price: { input: '1.00', output: '2.00' },
    ...extra,
  };
}
