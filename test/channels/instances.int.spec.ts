import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, startTestGateway, type SimulatedGateway, type TestGateway } from '../support/gateway';

// Issue 19: channel state is shared by the instances of one deployment. An operator's disable or
// enable on one instance, and a channel whose credentials one instance found refused, are taken over
// by the others (through the log and the `channels` projection) within CHANNEL_FOLLOW_MS.

const model = (id: string) => textModel(id);

const config = (sim: Simulator): GatewayConfig =>
  ({
    models: [model('solo-model'), model('pair-model')],
    channels: [
      simulatorChannel(sim, 'solo', 'chat-completions', ['solo-model']),
      simulatorChannel(sim, 'pair-a', 'chat-completions', ['pair-model']),
      simulatorChannel(sim, 'pair-b', 'chat-completions', ['pair-model'], { priority: 1 }),
    ],
    // No probes: nothing but the instances' own calls and operators change a channel here.
    channel_health: { failures_before_cooldown: 1000, cooldown_s: 60, max_cooldown_s: 600, probe_interval_s: 0 },
  }) as GatewayConfig;

let a: SimulatedGateway;
let b: TestGateway;
let viaA: OpenAI;
let viaB: OpenAI;
beforeAll(async () => {
  a = await startSimulatedGateway(config, { channelFollowMs: 100 });
  b = await startTestGateway({ config: config(a.sim), db: a.t.db, channelFollowMs: 100 });
  await b.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const { key } = await a.t.accountWithKey();
  viaA = new OpenAI({ apiKey: key, baseURL: `${a.baseUrl}/v1`, maxRetries: 0 });
  viaB = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${(b.gateway.app.server.address() as { port: number }).port}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const statusOn = async (t: TestGateway, id: string) =>
  ((await t.admin('GET', '/channels')).json() as { data: Array<{ id: string; status: string; disabled_by: string | null }> }).data.find((c) => c.id === id)!;
const ask = (client: OpenAI, model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('channel state across instances', () => {
  it("an operator's disable and enable on one instance are taken over by the other", async () => {
    expect((await ask(viaB, 'solo-model')).choices[0]!.message.content).toBe('Echo: hi');
    expect((await a.t.admin('POST', '/channels/solo/disable')).statusCode).toBe(200);
    await expect.poll(() => statusOn(b, 'solo'), { timeout: 5000 }).toMatchObject({ status: 'disabled', disabled_by: 'operator' });
    const refused = (await ask(viaB, 'solo-model').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect([refused.status, (refused.error as { code?: string }).code]).toEqual([503, 'no_channel_available']);

    expect((await a.t.admin('POST', '/channels/solo/enable')).statusCode).toBe(200);
    await expect.poll(() => statusOn(b, 'solo'), { timeout: 5000 }).toMatchObject({ status: 'healthy', disabled_by: null });
    expect((await ask(viaB, 'solo-model')).choices[0]!.message.content).toBe('Echo: hi');
    // Taken over, not recorded again: the log has the operator's two changes only.
    await b.gateway.runner.catchUpToHead();
    const changes = await a.t.gateway.storage.store.readStream('channel-solo');
    expect(changes.map((e) => (e.data as { to: string; cause: string }).to)).toEqual(['disabled', 'healthy']);
  });

  it('a channel whose credentials one instance found refused is left out by the other', async () => {
    a.sim.revokeKey('key-pair-a');
    // The call fails over to pair-b, the client unaware; pair-a's probe is refused too: disabled on A.
    expect((await ask(viaA, 'pair-model')).choices[0]!.message.content).toBe('Echo: hi');
    await expect.poll(() => statusOn(a.t, 'pair-a')).toMatchObject({ status: 'disabled', disabled_by: 'credentials' });
    await expect.poll(() => statusOn(b, 'pair-a'), { timeout: 5000 }).toMatchObject({ status: 'disabled', disabled_by: 'credentials' });
    const before = a.sim.requests.filter((r) => r.path.startsWith('/pair-a/')).length;
    for (let i = 0; i < 3; i++) expect((await ask(viaB, 'pair-model')).choices[0]!.message.content).toBe('Echo: hi');
    expect(a.sim.requests.filter((r) => r.path.startsWith('/pair-a/')).length).toBe(before);
  });
});
