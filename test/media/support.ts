import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { startSimulatedGateway, type SimulatedGateway, type TestGatewayOptions } from '../support/gateway';

export const IMAGE_PRICE = '0.04';
export const GRID_PRICE = '0.025';

/** Two image SKUs (one fixed-grid: the simulator answers ids containing "grid4" with 4
 * images) on a primary and a backup images channel, and one chat model. */
export function imagesConfig(sim: Simulator): GatewayConfig {
  const channel = (id: string, priority: number) => ({
    id,
    protocol: 'images' as const,
    base_url: `${sim.url}/${id}`,
    api_key: `key-${id}`,
    group: 'default',
    priority,
    weight: 1,
    models: { 'img-model': 'img-model-upstream', 'grid-model': 'grid4-upstream' },
    tools: [],
  });
  const base = { owned_by: 'test', aliases: [], callable: true, capabilities: [] };
  return {
    models: [
      { ...base, id: 'img-model', kind: 'image', endpoint_type: 'images_generations', aliases: ['img-model-v1'], price: { per_image: IMAGE_PRICE } },
      { ...base, id: 'grid-model', kind: 'image', endpoint_type: 'images_generations', price: { per_image: GRID_PRICE }, fixed_grid: 4 },
      { ...base, id: 'chat-model', kind: 'text', endpoint_type: null, default_max_tokens: 100, price: { input: '1.00', output: '2.00' } },
    ],
    channels: [
      channel('img-a', 0),
      channel('img-b', 1),
      {
        id: 'cc',
        protocol: 'chat-completions',
        base_url: `${sim.url}/cc`,
        api_key: 'key-cc',
        group: 'default',
        priority: 0,
        weight: 1,
        models: ['chat-model'],
        tools: [],
      },
    ],
  };
}

export type MediaHarness = SimulatedGateway;

export function startMediaHarness(options: Omit<TestGatewayOptions, 'config'> = {}): Promise<MediaHarness> {
  return startSimulatedGateway(imagesConfig, options);
}
