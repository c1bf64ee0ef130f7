import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, startTestGateway, type SimulatedGateway } from '../support/gateway';

const model = (id: string) => textModel(id);

const config = (sim: Simulator): GatewayConfig =>
  ({
    models: [model('probe-model'), model('solo-model')],
    channels: [
      simulatorChannel(sim, 'probe-a', 'chat-completions', ['probe-model']),
      simulatorChannel(sim, 'probe-b', 'chat-completions', ['probe-model'], { priority: 1 }),
      // One messages channel that translates for every client protocol.
      simulatorChannel(sim, 'solo', 'messages', ['solo-model']),
    ],
    channel_health: { failures_before_cooldown: 1, cooldown_s: 60, max_cooldown_s: 600, probe_interval_s: 0.4 },
  }) as GatewayConfig;

let h: SimulatedGateway;
let openai: OpenAI;
beforeAll(async () => {
  h = await startSimulatedGateway(config, { chatTimeoutMs: 5000 });
  const { key } = await h.t.accountWithKey();
  openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());

interface ChannelView {
  id: string;
  status: string;
  disabled_by: string | null;
  last_error: string | null;
  successes: number;
  failures: number;
  success_rate: number | null;
  latency_ms: number | null;
  last_change: { to: string; cause: string; reason: string; at: number } | null;
}
const channels = async () => ((await h.t.admin('GET', '/channels')).json() as { data: ChannelView[] }).data;
const channel = async (id: string) => (await channels()).find((c) => c.id === id)!;
const changes = async (id: string) => {
  const events = await h.t.gateway.storage.store.readStream(`channel-${id}`);
  return events.map((e) => ({ type: e.type, ...(e.data as { from: string; to: string; cause: string }) })).map(({ type, from, to, cause }) => ({ type, from, to, cause }));
};
/** The public catalogue's `supported_protocols` of a model. */
const protocolsOf = async (id: string) => {
  const response = await fetch(`${h.baseUrl}/api/v1/models/public?id=${id}`);
  return ((await response.json()) as { models: Array<{ supported_protocols: string[] }> }).models[0]!.supported_protocols;
};

describe('channel state: events, the admin view, operator actions, probes and the catalogue', () => {
  it('a channel key refused is disabled, recorded as an event, and brought back by a probe', async () => {
    // Refused twice: the call's 401 alone disables nothing, the probe it asks for is refused too.
    h.sim.enqueueFor({ pathPrefix: '/probe-a' }, 'http_401', 'http_401');
    const answer = await openai.chat.completions.create({ model: 'probe-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]!.message.content).toBe('Echo: hi');
    // The refusals are taken by the call and a probe, or by two probes; a probe refused disables the channel, the next brings it back.
    await expect.poll(() => changes('probe-a'), { timeout: 5000 }).toEqual([
      { type: 'ChannelStateChanged', from: 'healthy', to: 'disabled', cause: 'credentials' },
      { type: 'ChannelStateChanged', from: 'disabled', to: 'healthy', cause: 'probe' },
    ]);
    const view = await channel('probe-a');
    expect(view).toMatchObject({ status: 'healthy', disabled_by: null, last_change: { to: 'healthy', cause: 'probe' } });
    expect(view.last_error).toMatch(/401/);
    expect(view.successes).toBeGreaterThan(0);
    expect(view.failures).toBe(2);
    expect(view.success_rate).toBeGreaterThan(0);
    expect(view.success_rate).toBeLessThan(1);
    expect(view.latency_ms).not.toBeNull();
    // The probes are minimal requests of the channel's protocol.
    await expect
      .poll(() => h.sim.requests.some((r) => r.path.startsWith('/probe-b/') && (r.body as { max_tokens?: number }).max_tokens === 1), { timeout: 5000 })
      .toBe(true);
  });

  it('an operator disables and enables a channel; the catalogue and routing follow', async () => {
    expect(await protocolsOf('solo-model')).toEqual(['chat-completions', 'messages', 'responses', 'generate-content']);
    const disabled = await h.t.admin('POST', '/channels/solo/disable');
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json()).toMatchObject({ id: 'solo', status: 'disabled', disabled_by: 'operator', last_change: { to: 'disabled', cause: 'operator' } });
    expect(await protocolsOf('solo-model')).toEqual([]);
    const refused = (await openai.chat.completions.create({ model: 'solo-model', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(refused.status).toBe(503);
    expect(refused.error).toMatchObject({ code: 'no_channel_available' });
    // Probes leave an operator's disable alone.
    const before = h.sim.requests.filter((r) => r.path.startsWith('/solo/')).length;
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(h.sim.requests.filter((r) => r.path.startsWith('/solo/')).length).toBe(before);
    expect((await channel('solo')).status).toBe('disabled');

    const enabled = await h.t.admin('POST', '/channels/solo/enable');
    expect(enabled.json()).toMatchObject({ status: 'healthy', last_change: { to: 'healthy', cause: 'operator' } });
    expect(await protocolsOf('solo-model')).toHaveLength(4);
    const ok = await openai.chat.completions.create({ model: 'solo-model', messages: [{ role: 'user', content: 'back' }] });
    expect(ok.choices[0]!.message.content).toContain('back');
    await h.t.gateway.runner.catchUpToHead();
    // Both may fall in the same second (`at`): compared as a set.
    const rows = await h.t.db.sql.query<{ to_status: string; cause: string; actor: string | null }>(`SELECT to_status, cause, actor FROM channel_changes WHERE channel_id = 'solo'`);
    expect(rows).toHaveLength(2);
    expect(rows).toEqual(expect.arrayContaining([
      { to_status: 'disabled', cause: 'operator', actor: 'admin' },
      { to_status: 'healthy', cause: 'operator', actor: 'admin' },
    ]));
  });

  it('a probe on demand; an unknown channel is a 404', async () => {
    const probed = await h.t.admin('POST', '/channels/solo/probe');
    expect(probed.statusCode).toBe(200);
    expect(probed.json()).toMatchObject({ probe: 'ok', channel: { id: 'solo', status: 'healthy' } });
    const missing = await h.t.admin('POST', '/channels/nope/disable');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('channel_not_found');
  });
});

describe('a restart', () => {
  it('keeps a channel disabled whose last recorded change disabled it', async () => {
    expect((await h.t.admin('POST', '/channels/probe-b/disable')).statusCode).toBe(200);
    await h.t.admin('GET', '/channels');
    // Another instance starting on the same log (as a restarted one would).
    const other = await startTestGateway({ config: config(h.sim), db: h.t.db });
    try {
      expect(other.gateway.channels.state('probe-b')).toMatchObject({ status: 'disabled', disabledBy: 'operator' });
      expect(other.gateway.channels.state('probe-a').status).toBe('healthy');
    } finally {
      await other.close();
    }
  });
});
