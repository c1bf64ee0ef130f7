import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { Scrape } from '../support/prometheus';

// Issue 36, item 3: a conversation stays on the channel that served it while that channel is healthy,
// for every key, whatever the weights would spread; a failure moves it, and it stays where it moved.

/** Two equal channels of one model per chat protocol the test speaks: the weighted shuffle spreads calls over both. */
const config = (sim: Simulator): GatewayConfig =>
  ({
    models: [textModel('pin-model'), textModel('claude-pin')],
    channels: [
      simulatorChannel(sim, 'pin-a', 'chat-completions', ['pin-model']),
      simulatorChannel(sim, 'pin-b', 'chat-completions', ['pin-model']),
      simulatorChannel(sim, 'claude-a', 'messages', ['claude-pin']),
      simulatorChannel(sim, 'claude-b', 'messages', ['claude-pin']),
    ],
    // A single failure never cools a channel here: the session moves because its channel failed, not because it is sick.
    channel_health: { failures_before_cooldown: 5, cooldown_s: 30, max_cooldown_s: 60, probe_interval_s: 0 },
  }) as GatewayConfig;

let h: SimulatedGateway;
let alice: OpenAI;
let bob: OpenAI;
let aliceKey: string;
beforeAll(async () => {
  h = await startSimulatedGateway(config, { chatTimeoutMs: 5000 });
  aliceKey = (await h.t.accountWithKey()).key;
  alice = new OpenAI({ apiKey: aliceKey, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  bob = new OpenAI({ apiKey: (await h.t.accountWithKey()).key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());

/** The channels that took a turn: the simulator's request paths since `from`, in order (failed attempts included). */
const channelsSince = (from: number) => h.sim.requests.slice(from).map((r) => r.path.split('/')[1]!);

/** One turn of a chat-completions conversation, streamed every other time; the channel that answered it. */
async function turn(client: OpenAI, session: string | null, n: number): Promise<string> {
  const from = h.sim.requests.length;
  const headers = session === null ? {} : { session_id: session };
  const messages = [{ role: 'user' as const, content: `turn ${n}` }];
  if (n % 2 === 1) {
    const stream = await client.chat.completions.create({ model: 'pin-model', messages, stream: true }, { headers });
    for await (const chunk of stream) void chunk;
  } else {
    await client.chat.completions.create({ model: 'pin-model', messages }, { headers });
  }
  return channelsSince(from).at(-1)!;
}

async function pins(): Promise<Record<'hit' | 'moved' | 'new', number>> {
  const scrape = new Scrape(await (await fetch(`${h.baseUrl}/metrics`)).text());
  const of = (outcome: string) => scrape.value('gateway_session_pins_total', { outcome }) ?? 0;
  return { hit: of('hit'), moved: of('moved'), new: of('new') };
}

const other = (channel: string) => (channel === 'pin-a' ? 'pin-b' : 'pin-a');

describe('sticky sessions: a conversation stays on one channel for every key', () => {
  it('without a session, equal weights spread the calls over both channels', async () => {
    const served = new Set<string>();
    for (let n = 0; n < 24 && served.size < 2; n++) served.add(await turn(alice, null, 2 * n));
    expect([...served].sort()).toEqual(['pin-a', 'pin-b']);
  });

  it("a session's turns (session_id header, streamed or not) all reach the channel of its first turn; counted new then hits", async () => {
    const before = await pins();
    const served = [];
    for (let n = 0; n < 8; n++) served.push(await turn(alice, 'conv-1', n));
    expect(new Set(served).size).toBe(1);
    const after = await pins();
    expect(after.new - before.new).toBe(1);
    expect(after.hit - before.hit).toBe(7);
    expect(after.moved - before.moved).toBe(0);
  });

  it('a turn whose pinned channel fails falls over, and the session stays on the channel that answered', async () => {
    const pinned = await turn(alice, 'conv-2', 0);
    const before = await pins();
    h.sim.enqueueFor({ pathPrefix: `/${pinned}/` }, 'http_500');
    const from = h.sim.requests.length;
    expect(await turn(alice, 'conv-2', 1)).toBe(other(pinned));
    expect(channelsSince(from)).toEqual([pinned, other(pinned)]);
    const later = [];
    for (let n = 2; n < 8; n++) later.push(await turn(alice, 'conv-2', n));
    expect(later).toEqual(later.map(() => other(pinned)));
    const after = await pins();
    expect(after.moved - before.moved).toBe(1);
    expect(after.hit - before.hit).toBe(6);
  });

  it("another account naming the same session id has a pin of its own: it neither follows nor moves the first account's", async () => {
    const home = await turn(alice, 'shared-session', 0);
    // Bob's first turn is new (not a hit on Alice's pin); made to land on Alice's channel, then moved off it.
    const before = await pins();
    h.sim.enqueueFor({ pathPrefix: `/${other(home)}/` }, 'http_500');
    expect(await turn(bob, 'shared-session', 0)).toBe(home);
    h.sim.reset(); // the failure queued for the other channel, if Bob's turn did not take it
    expect((await pins()).new - before.new).toBe(1);
    h.sim.enqueueFor({ pathPrefix: `/${home}/` }, 'http_500');
    expect(await turn(bob, 'shared-session', 1)).toBe(other(home));
    for (let n = 1; n < 5; n++) expect(await turn(alice, 'shared-session', n)).toBe(home);
    for (let n = 2; n < 5; n++) expect(await turn(bob, 'shared-session', n)).toBe(other(home));
  });

  it("the protocols' own hints pin too: prompt_cache_key on the Responses API, Claude Code's metadata.user_id on Messages", async () => {
    const from = h.sim.requests.length;
    for (let n = 0; n < 8; n++) await alice.responses.create({ model: 'pin-model', input: `turn ${n}`, prompt_cache_key: 'codex-thread-7' });
    expect(new Set(channelsSince(from)).size).toBe(1);

    const anthropic = new Anthropic({ apiKey: aliceKey, baseURL: h.baseUrl, maxRetries: 0 });
    const userId = 'user_9f2c_account_11111111-2222-3333-4444-555555555555_session_0b6c43e5-9b1f-4b6a-8e8c-2f6f4a5c9d10';
    const at = h.sim.requests.length;
    for (let n = 0; n < 8; n++) await anthropic.messages.create({ model: 'claude-pin', max_tokens: 20, metadata: { user_id: userId }, messages: [{ role: 'user', content: `turn ${n}` }] });
    const served = channelsSince(at);
    expect(served).toHaveLength(8);
    expect(new Set(served).size).toBe(1);
  });
});
