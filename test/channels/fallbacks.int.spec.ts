import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema, type GatewayConfig } from '../../src/config/schema';
import { formatUsd } from '../../src/money/usd';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel, textModel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

const model = (id: string, price: { input: string; output: string }, fallbacks?: string[]) => textModel(id, { price, ...(fallbacks ? { fallbacks } : {}) });

/** main -> backup (the dearest) -> last; `solo` is priced as main, with no fallbacks. */
const config = (sim: Simulator): GatewayConfig =>
  ({
    models: [
      model('main', { input: '1.00', output: '2.00' }, ['backup']),
      model('backup', { input: '3.00', output: '6.00' }, ['last']),
      model('last', { input: '0.50', output: '1.00' }),
      model('solo', { input: '1.00', output: '2.00' }),
    ],
    channels: [
      simulatorChannel(sim, 'main-a', 'chat-completions', ['main']),
      simulatorChannel(sim, 'backup-a', 'chat-completions', ['backup']),
      simulatorChannel(sim, 'last-a', 'chat-completions', ['last']),
      simulatorChannel(sim, 'solo-a', 'chat-completions', ['solo']),
    ],
    channel_health: { failures_before_cooldown: 100, cooldown_s: 30, max_cooldown_s: 1800, probe_interval_s: 0 },
  }) as GatewayConfig;

let h: SimulatedGateway;
let openai: OpenAI;
let key: string;
let accountId: string;
beforeAll(async () => {
  h = await startSimulatedGateway(config);
  const created = await h.t.accountWithKey();
  key = created.key;
  accountId = created.accountId;
  openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());

interface Row {
  request_id: string;
  model: string;
  requested_model?: string;
  status: string;
  attempts_count: number;
  channel_id: string | null;
}
/** The call-log record, the hold and the captured amount of the account's last call. */
async function lastCall(): Promise<{ row: Row; held: bigint; captured: bigint | null }> {
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  const closing = events.filter((e) => e.type === 'HoldSettled' || e.type === 'HoldReleased').at(-1)!;
  const data = closing.data as { hold_id: string; call: Row; captured?: string };
  const reserved = events.find((e) => e.type === 'FundsReserved' && (e.data as { hold_id: string }).hold_id === data.hold_id)!;
  return { row: data.call, held: BigInt((reserved.data as { amount: string }).amount), captured: data.captured === undefined ? null : BigInt(data.captured) };
}
const upstreamHits = (channel: string) => h.sim.requests.filter((r) => r.path.startsWith(`/${channel}/`)).length;
const ask = (modelId: string) => openai.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'same prompt' }] }).withResponse();

describe('model fallbacks: tried in order when every channel of the model failed with a retryable error', () => {
  it('a 5xx of the model answered by its fallback, billed at the fallback; the row names both; the cost header is the settled amount', async () => {
    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_503');
    const { data, response } = await ask('main');
    expect(data.choices[0]!.message.content).toBe('Echo: same prompt');
    const { row, held, captured } = await lastCall();
    expect(row).toMatchObject({ model: 'backup', requested_model: 'main', status: 'success', attempts_count: 2, channel_id: 'backup-a' });
    expect(response.headers.get('x-gateway-cost')).toBe(formatUsd(captured!));
    const fallbackHold = held;

    // The hold covered the dearest model of the chain: the same as a call on `backup` itself, above a
    // call priced as `main` without fallbacks.
    const direct = await ask('backup');
    const backup = await lastCall();
    expect(backup.row.requested_model).toBeUndefined();
    expect(backup.row.model).toBe('backup');
    expect(direct.response.headers.get('x-gateway-cost')).toBe(formatUsd(backup.captured!));
    // Billed at the model that answered: the same usage on the same model costs the same.
    expect(backup.captured).toBe(captured);
    expect(backup.held).toBe(fallbackHold);
    await ask('solo');
    const solo = await lastCall();
    expect(solo.held).toBeLessThan(fallbackHold);
    expect(solo.captured).toBeLessThan(captured!);
  });

  it("a fallback's own fallbacks follow; a 429 and a 502 fall back too", async () => {
    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_429');
    h.sim.enqueueFor({ pathPrefix: '/backup-a' }, 'http_502');
    const { data } = await ask('main');
    expect(data.choices[0]!.message.content).toBe('Echo: same prompt');
    expect((await lastCall()).row).toMatchObject({ model: 'last', requested_model: 'main', attempts_count: 3, channel_id: 'last-a' });
    // The admin log row says so too, and still does after the call log is rebuilt from the log (COPY).
    const logged = async () => {
      await h.t.gateway.runner.catchUpToHead();
      const rows = (await h.t.admin('GET', `/accounts/${accountId}/logs`)).json().data as Array<{ model: string; requested_model: string | null }>;
      return rows.filter((r) => r.requested_model === 'main').map((r) => r.model).sort();
    };
    const before = await logged();
    expect(before).toEqual(expect.arrayContaining(['backup', 'last']));
    await h.t.gateway.runner.rebuild(['call-log']);
    expect(await logged()).toEqual(before);
  });

  it('never on a client 4xx: the upstream answer is passed through and no fallback is asked', async () => {
    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_400');
    const before = upstreamHits('backup-a');
    const error = (await ask('main').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(400);
    expect(upstreamHits('backup-a')).toBe(before);
    const { row, captured } = await lastCall();
    expect(row).toMatchObject({ model: 'main', status: 'error', attempts_count: 1 });
    expect(row.requested_model).toBeUndefined();
    expect(captured).toBeNull();
  });

  it('when the whole chain fails the client gets the last failure, nothing billed, the row names the model asked for', async () => {
    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_500');
    h.sim.enqueueFor({ pathPrefix: '/backup-a' }, 'http_500');
    h.sim.enqueueFor({ pathPrefix: '/last-a' }, 'http_503');
    const error = (await ask('main').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(503);
    const { row, captured } = await lastCall();
    expect(row).toMatchObject({ model: 'main', status: 'error', attempts_count: 3 });
    expect(captured).toBeNull();
  });

  it('a stream whose channel failed before its first byte is answered by the fallback', async () => {
    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_503');
    const stream = await openai.chat.completions.create({ model: 'main', messages: [{ role: 'user', content: 'streamed' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Echo: streamed');
    expect((await lastCall()).row).toMatchObject({ model: 'backup', requested_model: 'main', status: 'success' });
  });

  it('works from every chat protocol: Messages, Responses and Gemini, streamed or not', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_503');
    const message = await anthropic.messages.create({ model: 'main', max_tokens: 50, messages: [{ role: 'user', content: 'claude' }] });
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'Echo: claude' });
    expect((await lastCall()).row).toMatchObject({ model: 'backup', requested_model: 'main', endpoint: 'messages' });

    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_503');
    const streamed = await anthropic.messages.stream({ model: 'main', max_tokens: 50, messages: [{ role: 'user', content: 'claude streamed' }] }).finalMessage();
    expect(streamed.content[0]).toMatchObject({ type: 'text', text: 'Echo: claude streamed' });
    expect((await lastCall()).row).toMatchObject({ model: 'backup', requested_model: 'main', status: 'success' });

    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_503');
    const response = await openai.responses.create({ model: 'main', input: 'responses' });
    expect(response.output_text).toBe('Echo: responses');
    expect((await lastCall()).row).toMatchObject({ model: 'backup', requested_model: 'main', endpoint: 'responses' });

    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
    h.sim.enqueueFor({ pathPrefix: '/main-a' }, 'http_503');
    const gemini = await ai.models.generateContent({ model: 'main', contents: 'gemini' });
    expect(gemini.text).toBe('Echo: gemini');
    expect((await lastCall()).row).toMatchObject({ model: 'backup', requested_model: 'main', endpoint: 'generate-content' });
  });

  it('the call log shows the model asked for beside the one that answered', async () => {
    const answer = await h.t.admin('GET', `/accounts/${accountId}/logs?limit=20`);
    const rows = answer.json().data as Array<{ model: string; requested_model: string | null; status: string }>;
    expect(rows.some((r) => r.model === 'backup' && r.requested_model === 'main')).toBe(true);
    expect(rows.some((r) => r.model === 'solo' && r.requested_model === null)).toBe(true);
  });
});

describe('fallbacks in the config', () => {
  const base = (models: unknown[]) => ({ models, channels: [] });
  const problems = (models: unknown[]) => {
    const parsed = ConfigSchema.safeParse(base(models));
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  it('must exist, be of the same kind, and not come back to the model', () => {
    expect(problems([model('a', { input: '1', output: '1' }, ['b']), model('b', { input: '1', output: '1' })])).toEqual([]);
    expect(problems([model('a', { input: '1', output: '1' }, ['nope'])])).toEqual(['models.0.fallbacks: model a falls back to unknown model nope (use canonical ids)']);
    expect(problems([model('a', { input: '1', output: '1' }, ['img']), { id: 'img', kind: 'image', price: { per_image: '0.01' } }])).toEqual([
      'models.0.fallbacks: model a falls back to img, a model of another kind',
    ]);
    expect(problems([model('a', { input: '1', output: '1' }, ['b']), model('b', { input: '1', output: '1' }, ['c']), model('c', { input: '1', output: '1' }, ['a'])])).toEqual([
      'models.0.fallbacks: model a: its fallbacks come back to it (a -> b -> c -> a)',
      'models.1.fallbacks: model b: its fallbacks come back to it (b -> c -> a -> b)',
      'models.2.fallbacks: model c: its fallbacks come back to it (c -> a -> b -> c)',
    ]);
    expect(problems([model('a', { input: '1', output: '1' }, ['a'])])).toEqual(['models.0.fallbacks: model a: its fallbacks come back to it (a -> a)']);
  });
});
