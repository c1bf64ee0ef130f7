import type { ChannelConfig, ChatProtocol } from '../../src/config/schema';
import type { Simulator } from '../../src/upstream/simulator';

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
