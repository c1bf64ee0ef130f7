import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, startTestGateway, type SimulatedGateway, type TestGateway } from '../support/gateway';
import { Scrape } from '../support/prometheus';

// Issue 33, item 6: channel state on /metrics, so that an alert on a disabled channel needs no admin API.
// Two instances on one database: B shows what it has taken over from A (docs/operations.md, "Metrics").

const config = (sim: Simulator): GatewayConfig =>
  ({
    models: [textModel('key-model'), textModel('solo-model')],
    channels: [
      // The simulator refuses a key containing "invalid" with 401: the channel's own credentials.
      simulatorChannel(sim, 'key-a', 'chat-completions', ['key-model'], { api_key: 'revoked-invalid-key' }),
      simulatorChannel(sim, 'key-b', 'chat-completions', ['key-model'], { priority: 1 }),
      simulatorChannel(sim, 'solo', 'chat-completions', ['solo-model']),
    ],
    // Probes only when a call asks for one.
    channel_health: { failures_before_cooldown: 1000, cooldown_s: 60, max_cooldown_s: 600, probe_interval_s: 0 },
  }) as GatewayConfig;

let a: SimulatedGateway;
let b: TestGateway;
let bBase: string;
let openai: OpenAI;
beforeAll(async () => {
  a = await startSimulatedGateway(config, { channelFollowMs: 100, chatTimeoutMs: 5000 });
  b = await startTestGateway({ config: config(a.sim), db: a.t.db, channelFollowMs: 100 });
  await b.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  bBase = `http://127.0.0.1:${(b.gateway.app.server.address() as { port: number }).port}`;
  const { key } = await a.t.accountWithKey();
  openai = new OpenAI({ apiKey: key, baseURL: `${a.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

async function scrape(base: string): Promise<Scrape> {
  const response = await fetch(`${base}/metrics`);
  expect(response.status).toBe(200);
  return new Scrape(await response.text());
}

/** A channel's status gauge: the one series at 1 (`status` or `status/disabled_by`), and how many series it has. */
async function statusOf(base: string, channel: string): Promise<{ on: string[]; series: number }> {
  const samples = (await scrape(base)).all('gateway_channel_status').filter((s) => s.labels.channel === channel);
  return {
    on: samples.filter((s) => s.value === 1).map((s) => (s.labels.disabled_by ? `${s.labels.status}/${s.labels.disabled_by}` : s.labels.status!)),
    series: samples.length,
  };
}

const changes = async (base: string, labels: Record<string, string>) => (await scrape(base)).value('gateway_channel_state_changes_total', labels) ?? 0;

describe('channel state on /metrics', () => {
  it('every channel has a status gauge, healthy at start, with every status a series', async () => {
    for (const channel of ['key-a', 'key-b', 'solo']) expect(await statusOf(a.baseUrl, channel)).toEqual({ on: ['healthy'], series: 4 });
    const healthy = (await scrape(a.baseUrl)).value('gateway_channel_status', { channel: 'solo', status: 'healthy', disabled_by: '' });
    expect(healthy).toBe(1);
  });

  it('a channel whose credentials a probe refused: disabled by credentials, the change counted, the failover labelled credentials', async () => {
    const answer = await openai.chat.completions.create({ model: 'key-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]!.message.content).toBe('Echo: hi');
    await expect.poll(() => statusOf(a.baseUrl, 'key-a'), { timeout: 5000 }).toEqual({ on: ['disabled/credentials'], series: 4 });
    const scraped = await scrape(a.baseUrl);
    expect(scraped.value('gateway_channel_status', { channel: 'key-a', status: 'disabled', disabled_by: 'credentials' })).toBe(1);
    expect(scraped.value('gateway_channel_state_changes_total', { channel: 'key-a', from: 'healthy', to: 'disabled', cause: 'credentials' })).toBe(1);
    expect(scraped.value('gateway_upstream_failovers_total', { channel: 'key-a', cause: 'credentials' })).toBe(1);
    expect(scraped.value('gateway_upstream_attempts_total', { channel: 'key-a', result: 'credentials' })).toBe(1);
    expect(scraped.value('gateway_upstream_failovers_total', { channel: 'key-a', cause: 'client_error' })).toBeUndefined();
    expect(scraped.value('gateway_upstream_attempts_total', { channel: 'key-a', result: 'client_error' })).toBeUndefined();
    // The other instance shows it too once it has followed the change, and does not count it again.
    await expect.poll(() => statusOf(bBase, 'key-a'), { timeout: 5000 }).toEqual({ on: ['disabled/credentials'], series: 4 });
    expect(await changes(bBase, { channel: 'key-a', from: 'healthy', to: 'disabled', cause: 'credentials' })).toBe(0);
  });

  it("an operator's disable and enable through the admin API", async () => {
    expect((await a.t.admin('POST', '/channels/solo/disable')).statusCode).toBe(200);
    expect(await statusOf(a.baseUrl, 'solo')).toEqual({ on: ['disabled/operator'], series: 4 });
    expect(await changes(a.baseUrl, { channel: 'solo', from: 'healthy', to: 'disabled', cause: 'operator' })).toBe(1);
    await expect.poll(() => statusOf(bBase, 'solo'), { timeout: 5000 }).toEqual({ on: ['disabled/operator'], series: 4 });

    expect((await a.t.admin('POST', '/channels/solo/enable')).statusCode).toBe(200);
    expect(await statusOf(a.baseUrl, 'solo')).toEqual({ on: ['healthy'], series: 4 });
    expect(await changes(a.baseUrl, { channel: 'solo', from: 'disabled', to: 'healthy', cause: 'operator' })).toBe(1);
    await expect.poll(() => statusOf(bBase, 'solo'), { timeout: 5000 }).toEqual({ on: ['healthy'], series: 4 });
  });
});
