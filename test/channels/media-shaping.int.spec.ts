import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema, type GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import type { SimulatedGateway } from '../support/gateway';
import { api, mediaChannel, mediaModel, startTaskHarness } from '../media/task-support';

// Issue 19, item 3: per-channel request shaping on media channels too (an Azure OpenAI images or speech
// deployment, a content-generation API behind an egress proxy): the channel's query parameters, its auth
// header and scheme, and its extra headers go on every request: images, speech, a task's submission and
// its polls.

const shaping = { query: { 'api-version': '2024-10-21' }, auth_header: 'api-key', headers: { 'X-Org': 'acme' } };

const config = (sim: Simulator): GatewayConfig => ({
  models: [
    mediaModel({ id: 'img', kind: 'image', endpoint_type: 'images_generations', price: { per_image: '0.04' } }),
    mediaModel({ id: 'tts', kind: 'speech', price: { per_1k_characters: '0.015' } }),
    mediaModel({ id: 'vid', kind: 'video', price: { per_second: '0.10' } }),
  ],
  channels: [
    { ...mediaChannel(sim, 'img-az', 'images', ['img']), ...shaping },
    { ...mediaChannel(sim, 'tts-az', 'speech', ['tts']), ...shaping },
    { ...mediaChannel(sim, 'vid-px', 'videos', ['vid']), ...shaping, auth_header: 'x-api-key', auth_scheme: '' },
  ],
}) as GatewayConfig;

let h: SimulatedGateway;
let key: string;
beforeAll(async () => {
  h = await startTaskHarness(config);
  ({ key } = await h.t.accountWithKey());
});
afterAll(() => h.close());

const requestsTo = (prefix: string) => h.sim.requests.filter((r) => r.path.startsWith(`/${prefix}/`));

describe('request shaping on media channels', () => {
  it('images and speech requests carry the query, the key in the named header and the extra headers', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const image = await openai.images.generate({ model: 'img', prompt: 'a lighthouse' });
    expect(image.data?.length).toBe(1);
    const speech = await openai.audio.speech.create({ model: 'tts', input: 'hello there', voice: 'alloy' });
    expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(0);
    for (const prefix of ['img-az', 'tts-az']) {
      const [seen] = requestsTo(prefix);
      expect(seen, prefix).toBeDefined();
      expect(seen!.query).toMatchObject({ 'api-version': '2024-10-21' });
      expect(seen!.headers['api-key']).toBe(`key-${prefix}`);
      expect(seen!.headers.authorization).toBeUndefined();
      expect(seen!.headers['x-org']).toBe('acme');
    }
  });

  it("a task's submission and every poll are shaped the same way", async () => {
    const http = api(h);
    const submitted = (await (await http.post('/v1/videos/generations', key, { model: 'vid', content: [{ type: 'text', text: 'waves [[sim:task_polls:2]]' }] })).json()) as { id: string };
    await http.until(`/v1/videos/generations/${submitted.id}`, key, (b) => b.status === 'succeeded');
    const seen = requestsTo('vid-px');
    expect(seen.map((r) => r.method)).toEqual(expect.arrayContaining(['POST', 'GET']));
    for (const r of seen) {
      expect(r.query).toMatchObject({ 'api-version': '2024-10-21' });
      expect(r.headers['x-api-key']).toBe('key-vid-px');
      expect(r.headers.authorization).toBeUndefined();
      expect(r.headers['x-org']).toBe('acme');
    }
  });

  it('refuses a path_template on a media channel (it speaks several paths)', () => {
    const parsed = ConfigSchema.safeParse({ ...config(h.sim), channels: [{ ...config(h.sim).channels[0], path_template: '/openai/deployments/{model}/images/generations' }] });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => i.message).join('; ')).toMatch(/path_template is for chat channels/);
  });
});
