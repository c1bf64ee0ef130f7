import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { refusedUrl, type Simulator } from '../../src/simulator';
import { imagesConfig } from '../media/support';
import { mediaChannel, mediaModel } from '../media/task-support';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

/**
 * Issue 31, item 1: what one account's requests provoke (a WAF's 403 to a prompt, 5xx to a crafted input)
 * never switches a channel off for the others; a neutral probe with the channel's own credentials decides.
 */
function config(dead: string) {
  return (sim: Simulator): GatewayConfig => {
    const images = imagesConfig(sim);
    return {
      ...images,
      models: [
        ...images.models,
        ...['talk-model', 'dead-model', 'key-model', 'gem-key-model'].map((id) => textModel(id)),
        mediaModel({ id: 'vid-model', kind: 'video', price: { per_second: '0.10' } }),
        mediaModel({ id: 'tts-model', kind: 'speech', price: { per_1k_characters: '0.01' } } as Parameters<typeof mediaModel>[0]),
      ],
      channels: [
        ...images.channels,
        simulatorChannel(sim, 'talk-a', 'chat-completions', ['talk-model']),
        simulatorChannel(sim, 'dead-a', 'chat-completions', ['dead-model'], { base_url: dead }),
        simulatorChannel(sim, 'key-a', 'chat-completions', ['key-model']),
        simulatorChannel(sim, 'key-b', 'chat-completions', ['key-model'], { priority: 1 }),
        simulatorChannel(sim, 'gem-a', 'generate-content', ['gem-key-model']),
        simulatorChannel(sim, 'gem-b', 'generate-content', ['gem-key-model'], { priority: 1 }),
        mediaChannel(sim, 'vid-a', 'videos', ['vid-model']),
        mediaChannel(sim, 'tts-a', 'speech', ['tts-model']),
      ],
      channel_health: { failures_before_cooldown: 3, cooldown_s: 30, max_cooldown_s: 60, probe_interval_s: 0, confirm_probe_interval_s: 0.05, credentials_retry_s: 0.3, max_credentials_retry_s: 1 },
    } as GatewayConfig;
  };
}

let h: SimulatedGateway;
let mallory: OpenAI;
let alice: OpenAI;
beforeAll(async () => {
  h = await startSimulatedGateway(config(await refusedUrl()), { chatTimeoutMs: 5000 });
  const client = async () => new OpenAI({ apiKey: (await h.t.accountWithKey()).key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  mallory = await client();
  alice = await client();
});
afterAll(() => h.close());

const state = (id: string) => h.t.gateway.channels.state(id);
const probes = (id: string) => h.sim.requests.filter((r) => r.path.startsWith(`/${id}/`) && r.method === 'GET');
const failure = (promise: Promise<unknown>) => promise.then(() => null, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
const talk = (client: OpenAI, text: string) => client.chat.completions.create({ model: 'talk-model', messages: [{ role: 'user', content: text }] });

describe("one account's requests never switch a channel off for another", () => {
  it('an image prompt the upstream answers 403 (its content, not the key) leaves the images channels to the next account', async () => {
    const refused = await failure(mallory.images.generate({ model: 'img-model', prompt: 'forbidden [[sim:http_403]]' }));
    // Both channels refused this request: the client is told no channel could serve it, never invalid_api_key.
    expect(refused?.status).toBe(503);
    expect(refused?.error).toMatchObject({ code: 'no_channel_available' });
    // Each channel was probed with its own key (GET /v1/models, no marker): the key is fine.
    await until(() => probes('img-a').length > 0 && probes('img-b').length > 0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(probes('img-a')[0]).toMatchObject({ path: '/img-a/v1/models', apiKey: 'key-img-a' });
    expect(state('img-a')).toMatchObject({ status: 'healthy', disabledBy: null });
    const image = await alice.images.generate({ model: 'img-model', prompt: 'a cat' });
    expect(image.data).toHaveLength(1);
  });

  it('the same on a chat channel: a 403 to one message does not disable it', async () => {
    const refused = await failure(talk(mallory, 'forbidden [[sim:http_403]]'));
    expect(refused?.status).toBe(503);
    await until(() => h.sim.requests.some((r) => r.path.startsWith('/talk-a/') && r.scenarios.length === 0 && (r.body as { max_tokens?: number })?.max_tokens === 1));
    expect(state('talk-a')).toMatchObject({ status: 'healthy' });
    expect((await talk(alice, 'hello')).choices[0]!.message.content).toBe('Echo: hello');
  });

  it('four 500s from one account do not cool the channel for another while the probe says healthy', async () => {
    for (let i = 0; i < 4; i++) expect((await failure(mallory.images.generate({ model: 'img-model', prompt: `crash ${i} [[sim:http_500]]` })))?.status).toBe(500);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(state('img-a').status).toBe('healthy');
    expect(state('img-b').status).toBe('healthy');
    expect((await alice.images.generate({ model: 'img-model', prompt: 'a dog' })).data).toHaveLength(1);
  });

  it('a dead upstream still cools its channel with a single tenant: the probe fails too', async () => {
    for (let i = 0; i < 3; i++) expect((await failure(alice.chat.completions.create({ model: 'dead-model', messages: [{ role: 'user', content: 'hi' }] })))?.status).toBe(502);
    await until(() => state('dead-a').status === 'cooling');
    expect(state('dead-a').lastError).toMatch(/a probe failed|ECONNREFUSED/);
    const next = await failure(alice.chat.completions.create({ model: 'dead-model', messages: [{ role: 'user', content: 'hi' }] }));
    expect(next?.status).toBe(503);
  });

  it('a key really refused ends disabled (a probe confirmed it) and comes back by itself once the upstream takes it again', async () => {
    h.sim.revokeKey('key-key-a');
    const answer = await alice.chat.completions.create({ model: 'key-model', messages: [{ role: 'user', content: 'mine' }] });
    expect(answer.choices[0]!.message.content).toBe('Echo: mine');
    await until(() => state('key-a').status === 'disabled');
    expect(state('key-a')).toMatchObject({ disabledBy: 'credentials', lastError: expect.stringMatching(/401/) });
    const confirming = h.sim.requests.filter((r) => r.path.startsWith('/key-a/') && r.apiKey === 'key-key-a');
    expect(confirming.length).toBeGreaterThanOrEqual(2);
    h.sim.revokeKey('key-key-a', false);
    // Retried on its backoff (0.3 s, 0.6 s, …): no operator needed.
    await until(() => state('key-a').status === 'healthy', 4000);
    expect(h.sim.requests.at(-1)).toMatchObject({ path: '/key-a/v1/chat/completions' });
  });

  it("Gemini's 400 API_KEY_INVALID is the channel's key: another channel answers, the probe disables it, never the tenant's 400", async () => {
    h.sim.revokeKey('key-gem-a');
    const ai = new GoogleGenAI({ apiKey: alice.apiKey, httpOptions: { baseUrl: h.baseUrl } });
    // gem-a answers 400 INVALID_ARGUMENT "API key not valid" (what Gemini sends for a revoked key); gem-b serves the call.
    const answer = await ai.models.generateContent({ model: 'gem-key-model', contents: 'mine' });
    expect(answer.text).toBe('Echo: mine');
    expect(h.sim.requests.filter((r) => r.path.startsWith('/gem-a/') && r.apiKey === 'key-gem-a').length).toBeGreaterThanOrEqual(1);
    // The neutral probe (a minimal generateContent with the channel's key) is refused the same way: disabled.
    await until(() => state('gem-a').status === 'disabled');
    expect(state('gem-a')).toMatchObject({ disabledBy: 'credentials', lastError: expect.stringMatching(/400/) });
    expect(state('gem-b').status).toBe('healthy');
    h.sim.revokeKey('key-gem-a', false);
    await until(() => state('gem-a').status === 'healthy', 4000);
  });

  it('a Gemini key refused on every channel is no_channel_available to the client, never the upstream 400', async () => {
    h.sim.revokeKey('key-gem-a');
    h.sim.revokeKey('key-gem-b');
    try {
      const response = await fetch(`${h.baseUrl}/v1beta/models/gem-key-model:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': alice.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
      });
      expect(response.status).toBe(503);
      const error = ((await response.json()) as { error: { status: string; message: string } }).error;
      expect(error.status).toBe('UNAVAILABLE');
      expect(error.message).not.toMatch(/API key not valid/);
      await until(() => state('gem-a').status === 'disabled' && state('gem-b').status === 'disabled');
    } finally {
      h.sim.revokeKey('key-gem-a', false);
      h.sim.revokeKey('key-gem-b', false);
    }
    await until(() => state('gem-a').status === 'healthy' && state('gem-b').status === 'healthy', 4000);
  });

  it('media channels are probed: a task channel with a GET of an unknown task, speech with the model list', async () => {
    const probe = async (id: string) => (await h.t.admin('POST', `/channels/${id}/probe`)).json() as { probe: string; channel: { status: string } };
    expect(await probe('vid-a')).toMatchObject({ probe: 'ok', channel: { status: 'healthy' } });
    expect(h.sim.requests.at(-1)).toMatchObject({ method: 'GET', path: expect.stringMatching(/^\/vid-a\/api\/v3\/contents\/generations\/tasks\/probe-/), apiKey: 'key-vid-a' });
    expect(await probe('tts-a')).toMatchObject({ probe: 'ok' });
    expect(h.sim.requests.at(-1)).toMatchObject({ method: 'GET', path: '/tts-a/v1/models', apiKey: 'key-tts-a' });
    h.sim.revokeKey('key-vid-a');
    expect(await probe('vid-a')).toMatchObject({ probe: 'failed', channel: { status: 'disabled' } });
    h.sim.revokeKey('key-vid-a', false);
    await until(() => state('vid-a').status === 'healthy', 4000);
  });
});
