import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { imagesConfig } from '../media/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

/** The images harness with its primary channel's key revoked upstream (the simulator refuses keys containing "invalid"). */
const config = (sim: Simulator): GatewayConfig => {
  const base = imagesConfig(sim);
  return {
    ...base,
    channels: base.channels.map((c) => (c.id === 'img-a' ? { ...c, api_key: 'revoked-invalid' } : c)),
    channel_health: { failures_before_cooldown: 1, cooldown_s: 60, max_cooldown_s: 60, probe_interval_s: 0 },
  };
};

let h: SimulatedGateway;
let openai: OpenAI;
beforeAll(async () => {
  h = await startSimulatedGateway(config);
  openai = new OpenAI({ apiKey: (await h.t.accountWithKey()).key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());

describe('the synchronous media ladder follows the same failover rule', () => {
  it('an images channel whose key is refused is failed over and disabled once its probe is refused; a 5xx confirmed by a probe cools the other down', async () => {
    const image = await openai.images.generate({ model: 'img-model', prompt: 'a cat' });
    expect(image.data).toHaveLength(1);
    expect(h.sim.requests.filter((r) => r.method === 'POST').map((r) => r.path.split('/')[1])).toEqual(['img-a', 'img-b']);
    // The probe of an images channel: its key on OpenAI's model list.
    await expect.poll(() => h.t.gateway.channels.state('img-a')).toMatchObject({ status: 'disabled', disabledBy: 'credentials' });
    expect(h.sim.requests.filter((r) => r.method === 'GET')).toMatchObject([{ path: '/img-a/v1/models', apiKey: 'revoked-invalid' }]);

    h.sim.reset();
    h.sim.enqueue('http_500', 'http_500');
    const failed = (await openai.images.generate({ model: 'img-model', prompt: 'a dog' }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    // Only img-b was left to try: its 500 is passed through; its probe fails too, and it cools down.
    expect(failed.status).toBe(500);
    await expect.poll(() => h.t.gateway.channels.state('img-b').status).toBe('cooling');
    expect(h.sim.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /img-b/v1/images/generations', 'GET /img-b/v1/models']);
    h.sim.reset();
    const none = (await openai.images.generate({ model: 'img-model', prompt: 'a bird' }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(none.status).toBe(503);
    expect(none.error).toMatchObject({ code: 'no_channel_available' });
    expect(h.sim.requests).toHaveLength(0);
  });
});
