import type { GatewayConfig } from '../../src/config/schema';
import { startSimulator, type Simulator } from '../../src/upstream/simulator';
import { startTestGateway, type TestGateway, type TestGatewayOptions } from '../support/gateway';

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

export interface MediaHarness {
  readonly sim: Simulator;
  readonly t: TestGateway;
  readonly baseUrl: string;
  close(): Promise<void>;
}

export async function startMediaHarness(options: Omit<TestGatewayOptions, 'config'> = {}): Promise<MediaHarness> {
  const sim = await startSimulator();
  const t = await startTestGateway({ config: imagesConfig(sim), ...options });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.gateway.app.server.address() as { port: number }).port;
  return {
    sim,
    t,
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      await t.close();
      await sim.close();
    },
  };
}
