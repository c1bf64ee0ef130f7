import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema, type GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

const config = (sim: Simulator): GatewayConfig =>
  ConfigSchema.parse({
    models: [{ id: 'm', kind: 'text', default_max_tokens: 50, price: { input: '1.00', output: '2.00' } }],
    channels: [simulatorChannel(sim, 'chat', 'chat-completions', ['m'])],
    channel_health: { probe_interval_s: 0 },
    body_limits: { chat: '4KB', media: 2048, admin: '2KB' },
  });

let h: SimulatedGateway;
let key: string;
beforeAll(async () => {
  h = await startSimulatedGateway(config);
  ({ key } = await h.t.accountWithKey());
});
afterAll(() => h.close());

const text = (bytes: number) => 'x'.repeat(bytes);

describe('body_limits: the largest body of each route family, from the config file', () => {
  it('chat: a body under the limit is served; over it, 413 in the protocol’s own shape (OpenAI, Anthropic)', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const small = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: text(3000) }] });
    expect(small.choices[0]!.message.content).toContain('Echo:');
    const big = (await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: text(5000) }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(big.status).toBe(413);
    expect(big.error).toMatchObject({ code: 'request_too_large', type: 'invalid_request_error', message: expect.stringContaining('4 KB') });

    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const refused = (await anthropic.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: text(5000) }] }).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(refused.status).toBe(413);
    expect(refused.error).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
  });

  it('media and admin: their own limits, their own shapes', async () => {
    const media = await fetch(`${h.baseUrl}/v1/videos/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'v', prompt: text(3000) }),
    });
    expect(media.status).toBe(413);
    expect(((await media.json()) as { error: { code: string } }).error.code).toBe('request_too_large');

    // A raw payload: the padding is whitespace, so only its size differs from the one served below.
    const raw = await h.t.gateway.app.inject({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      payload: `{"name": "padded"${' '.repeat(3000)}}`,
    });
    expect(raw.statusCode).toBe(413);
    expect(raw.json()).toMatchObject({ error: { code: 'request_too_large' } });
    // Under the limit, the same request is served.
    const ok = await h.t.gateway.app.inject({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      payload: `{"name": "padded"${' '.repeat(1000)}}`,
    });
    expect(ok.statusCode).toBe(201);
  });

  it('is validated with the file: sizes with units, between 1KB and 1GB', () => {
    expect(ConfigSchema.parse({ body_limits: { chat: '16MB', admin: 4096 } }).body_limits).toEqual({ chat: 16 * 1024 * 1024, admin: 4096 });
    for (const bad of [{ chat: 10 }, { chat: '2GB' }, { chat: '8 furlongs' }, { images: '1MB' }]) expect(ConfigSchema.safeParse({ body_limits: bad }).success, JSON.stringify(bad)).toBe(false);
  });
});
