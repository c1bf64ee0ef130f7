import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { refusedUrl, type Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

const model = (id: string) => textModel(id);

/** One model per scenario, each with a failing first channel and a good second one (priority 1). */
function config(refused: string) {
  return (sim: Simulator): GatewayConfig =>
    ({
      models: ['refused-model', 'burst-model', 'key-model', 'slow-model', 'dead-model'].map(model),
      channels: [
        simulatorChannel(sim, 'refused-a', 'chat-completions', ['refused-model'], { base_url: refused }),
        simulatorChannel(sim, 'refused-b', 'chat-completions', ['refused-model'], { priority: 1 }),
        simulatorChannel(sim, 'burst-a', 'chat-completions', ['burst-model']),
        simulatorChannel(sim, 'burst-b', 'chat-completions', ['burst-model'], { priority: 1 }),
        // The simulator refuses a key containing "invalid" with 401.
        simulatorChannel(sim, 'key-a', 'chat-completions', ['key-model'], { api_key: 'revoked-invalid-key' }),
        simulatorChannel(sim, 'key-b', 'chat-completions', ['key-model'], { priority: 1 }),
        simulatorChannel(sim, 'slow-a', 'chat-completions', ['slow-model'], { first_byte_timeout_s: 0.3 }),
        simulatorChannel(sim, 'slow-b', 'chat-completions', ['slow-model'], { priority: 1 }),
        simulatorChannel(sim, 'dead-a', 'chat-completions', ['dead-model'], { api_key: 'invalid-a' }),
        simulatorChannel(sim, 'dead-b', 'chat-completions', ['dead-model'], { api_key: 'invalid-b', priority: 1 }),
      ],
      channel_health: { failures_before_cooldown: 2, cooldown_s: 1.5, max_cooldown_s: 10, probe_interval_s: 0 },
    }) as GatewayConfig;
}

let h: SimulatedGateway;
let openai: OpenAI;
let accountId: string;
beforeAll(async () => {
  const refused = await refusedUrl();
  h = await startSimulatedGateway(config(refused), { chatTimeoutMs: 5000 });
  const created = await h.t.accountWithKey();
  accountId = created.accountId;
  openai = new OpenAI({ apiKey: created.key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());

const ask = (modelId: string, text = 'hello', stream = false) =>
  stream
    ? openai.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: text }], stream: true }).then(async (s) => {
        let out = '';
        for await (const chunk of s) out += chunk.choices[0]?.delta.content ?? '';
        return out;
      })
    : openai.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: text }] }).then((c) => c.choices[0]!.message.content);

/** The call-log records of the account's calls, oldest first. */
async function calls(): Promise<Array<{ model: string; status: string; attempts_count: number; error_code?: string }>> {
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.map((e) => (e.data as { call?: never }).call).filter((c) => c !== undefined);
}
const lastCall = async (modelId: string) => (await calls()).filter((c) => c.model === modelId).at(-1)!;
const hits = (channel: string) => h.sim.requests.filter((r) => r.path.startsWith(`/${channel}/`)).length;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('channel health: failing channels are failed over, cooled down or disabled, the client unaware', () => {
  it("a refused connection fails over; two in a row of one account have it probed, whose failure cools it; at the cooldown's end it is probed again", async () => {
    expect(await ask('refused-model', 'one')).toBe('Echo: one');
    expect((await lastCall('refused-model')).attempts_count).toBe(2);
    expect(await ask('refused-model', 'two')).toBe('Echo: two');
    expect((await lastCall('refused-model')).attempts_count).toBe(2);
    // One account's run is no proof: a probe is, and it cannot connect either.
    await expect.poll(() => h.t.gateway.channels.state('refused-a').status).toBe('cooling');
    // Cooling: the dead channel is not tried at all.
    expect(await ask('refused-model', 'three', true)).toBe('Echo: three');
    expect((await lastCall('refused-model')).attempts_count).toBe(1);
    expect(h.t.gateway.channels.state('refused-a').lastError).toMatch(/ECONNREFUSED/);
    // At its cooldown's end it is probed again; the probe's failure cools it again, for twice as long.
    await sleep(1600);
    await expect.poll(() => h.t.gateway.channels.state('refused-a').cooldowns).toBe(2);
    const again = h.t.gateway.channels.state('refused-a');
    expect(again.status).toBe('cooling');
    expect(again.coolingUntil! - Date.now()).toBeGreaterThan(1000);
    expect(await ask('refused-model', 'four')).toBe('Echo: four');
    expect((await lastCall('refused-model')).attempts_count).toBe(1);
  });

  it("a burst of one account's 5xx is probed and forgiven; from two accounts it cools the channel, healthy again once its probe succeeds", async () => {
    h.sim.enqueueFor({ pathPrefix: '/burst-a' }, 'http_500', 'http_503');
    expect(await ask('burst-model', 'a')).toBe('Echo: a');
    expect(await ask('burst-model', 'b', true)).toBe('Echo: b');
    // The probe the run asked for met a working upstream: the failures were that account's.
    await expect.poll(() => hits('burst-a')).toBe(3);
    expect(h.t.gateway.channels.state('burst-a')).toMatchObject({ status: 'healthy', failuresInRow: 0 });
    expect(await ask('burst-model', 'c')).toBe('Echo: c');
    expect(h.sim.requests.at(-1)!.path).toMatch(/^\/burst-a\//);

    const other = new OpenAI({ apiKey: (await h.t.accountWithKey()).key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    h.sim.enqueueFor({ pathPrefix: '/burst-a' }, 'http_500', 'http_502');
    expect(await ask('burst-model', 'd')).toBe('Echo: d');
    expect((await other.chat.completions.create({ model: 'burst-model', messages: [{ role: 'user', content: 'e' }] })).choices[0]!.message.content).toBe('Echo: e');
    expect(h.t.gateway.channels.state('burst-a').status).toBe('cooling');
    const before = hits('burst-a');
    expect(await ask('burst-model', 'f')).toBe('Echo: f');
    expect(hits('burst-a')).toBe(before);
    // At the cooldown's end a probe finds it answering: healthy, the backoff forgotten.
    await sleep(1600);
    await expect.poll(() => h.t.gateway.channels.state('burst-a').status).toBe('healthy');
    expect(h.t.gateway.channels.state('burst-a')).toMatchObject({ failuresInRow: 0, cooldowns: 0 });
    expect(await ask('burst-model', 'g')).toBe('Echo: g');
    expect(h.sim.requests.at(-1)!.path).toMatch(/^\/burst-a\//);
  });

  it('an upstream 401 to the channel key is failed over like a 5xx; a probe refused too disables the channel; the client never sees it', async () => {
    expect(await ask('key-model', 'mine', true)).toBe('Echo: mine');
    await expect.poll(() => h.t.gateway.channels.state('key-a')).toMatchObject({ status: 'disabled', disabledBy: 'credentials' });
    expect((await lastCall('key-model')).attempts_count).toBe(2);
    const before = hits('key-a');
    await sleep(1600);
    // Disabled is not a cooldown: it stays out of routing however long it waits.
    expect(await ask('key-model', 'again')).toBe('Echo: again');
    expect(hits('key-a')).toBe(before);
    expect((await lastCall('key-model')).attempts_count).toBe(1);
  });

  it('a slow channel (no answer within its first_byte_timeout_s) is failed over', async () => {
    h.sim.enqueueFor({ pathPrefix: '/slow-a' }, 'slow_first_byte:2000');
    const started = Date.now();
    expect(await ask('slow-model', 'slow')).toBe('Echo: slow');
    expect(Date.now() - started).toBeLessThan(1800);
    expect((await lastCall('slow-model')).attempts_count).toBe(2);
    expect(h.t.gateway.channels.state('slow-a')).toMatchObject({ status: 'healthy', failuresInRow: 1 });
    expect(h.t.gateway.channels.state('slow-a').lastError).toMatch(/in time/);
  });

  it('when every channel refused its credentials the client gets 503 no_channel_available, then it is refused before any upstream', async () => {
    const error = await ask('dead-model', 'x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ code: 'no_channel_available' });
    expect(await lastCall('dead-model')).toMatchObject({ status: 'error', error_code: 'no_channel_available', attempts_count: 2 });
    // Each channel's own probe is refused as well: both disabled.
    await expect.poll(() => ['dead-a', 'dead-b'].map((id) => h.t.gateway.channels.state(id).status)).toEqual(['disabled', 'disabled']);
    const before = h.sim.requests.length;
    const next = (await ask('dead-model', 'y').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(next.status).toBe(503);
    expect(next.error).toMatchObject({ code: 'no_channel_available' });
    expect(next.message).toMatch(/cooling down or disabled/);
    expect(h.sim.requests.length).toBe(before);
    expect(await lastCall('dead-model')).toMatchObject({ status: 'rejected', error_code: 'no_channel_available' });
  });
});
