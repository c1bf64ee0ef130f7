import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { parseUsd } from '../../src/money/usd';
import { promptTokens, type Simulator } from '../../src/simulator';
import { simulatorChannel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { chatConfig, expectedCost } from './support';

// Issue 21, item 5: the pre-charge ignored `n` (chat-completions) and `candidateCount`
// (generate-content), so a call asking for many answers was held for one and settled for all of
// them: wallets went far below zero and keys spent past their caps.

/** chatConfig, plus a model per direction served only by a channel of the other protocol. */
function config(sim: Simulator): GatewayConfig {
  const base = chatConfig(sim);
  const model = (id: string) => ({ ...base.models[0]!, id, aliases: [] });
  const channel = (id: string, protocol: 'chat-completions' | 'generate-content', modelId: string) =>
    simulatorChannel(sim, id, protocol, [modelId], { translation: true });
  return {
    models: [...base.models, model('cc-via-gem'), model('gem-via-cc')],
    channels: [...base.channels, channel('gem-t', 'generate-content', 'cc-via-gem'), channel('cc-t', 'chat-completions', 'gem-via-cc')],
  };
}

let h: SimulatedGateway;
beforeAll(async () => {
  h = await startSimulatedGateway(config, { chatTimeoutMs: 5000 });
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

async function client(keyFields: Record<string, unknown> = {}) {
  const { accountId, key, keyId } = await h.t.accountWithKey(keyFields);
  return {
    accountId,
    keyId,
    openai: new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 }),
    ai: new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } }),
  };
}

interface Settled {
  hold_amount: string;
  captured: string;
  call: { status: string; input_tokens: number; output_tokens: number };
}

/** The settlements of an account's wallet, as the event store has them. */
async function settlements(accountId: string): Promise<Settled[]> {
  await h.t.gateway.ledger.idle();
  const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
  return events.filter((e) => e.type === 'HoldSettled').map((e) => e.data as Settled);
}

/** The spec's pre-charge prompt: the prompt document's JSON bytes / 4. */
const promptEstimate = (document: unknown) => Math.ceil(Buffer.byteLength(JSON.stringify(document)) / 4);

describe('the number of answers a call asks for', () => {
  it('holds n answers of a chat-completions call, and settles within the hold (openai SDK)', async () => {
    const { accountId, openai } = await client();
    const messages = [{ role: 'user' as const, content: 'many answers [[sim:reply_tokens:50]]' }];
    const completion = await openai.chat.completions.create({ model: 'chat-model', messages, n: 4, max_tokens: 50 });
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(completion.usage!.completion_tokens).toBe(200);
    const [settled] = await settlements(accountId);
    expect(BigInt(settled!.hold_amount)).toBe(expectedCost(promptEstimate(messages), 0, 4 * 50));
    expect(BigInt(settled!.captured)).toBe(expectedCost(completion.usage!.prompt_tokens, 0, 200));
    expect(BigInt(settled!.captured)).toBeLessThanOrEqual(BigInt(settled!.hold_amount));
  });

  it('holds n answers of a streamed call too', async () => {
    const { accountId, openai } = await client();
    const messages = [{ role: 'user' as const, content: 'streamed answers [[sim:reply_tokens:30]]' }];
    const stream = await openai.chat.completions.create({ model: 'chat-model', messages, n: 3, max_tokens: 30, stream: true, stream_options: { include_usage: true } });
    const texts = ['', '', ''];
    let output = 0;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) texts[choice.index] += choice.delta.content ?? '';
      if (chunk.usage) output = chunk.usage.completion_tokens;
    }
    expect(texts.every((t) => t.length > 0)).toBe(true);
    expect(output).toBe(90);
    await expect.poll(async () => (await settlements(accountId)).length).toBe(1);
    const [settled] = await settlements(accountId);
    expect(settled!.call.status).toBe('success');
    expect(BigInt(settled!.hold_amount)).toBe(expectedCost(promptEstimate(messages), 0, 3 * 30));
    expect(BigInt(settled!.captured)).toBeLessThanOrEqual(BigInt(settled!.hold_amount));
  });

  it('keeps a capped key within its cap under concurrent calls with n', async () => {
    const { accountId, keyId, openai } = await client({ spend_cap_usd: '0.05' });
    // Each call: 8 answers of 1,000 tokens at $2 per 1M = $0.016; three fit in the cap.
    const call = () =>
      openai.chat.completions
        .create({ model: 'chat-model', messages: [{ role: 'user', content: 'spend [[sim:reply_tokens:1000]]' }], n: 8, max_tokens: 1000 })
        .then(
          () => 'served',
          (error: unknown) => (error instanceof OpenAI.APIError ? error.status : error),
        );
    const outcomes = await Promise.all(Array.from({ length: 10 }, call));
    expect(outcomes.filter((o) => o === 'served').length).toBeGreaterThan(0);
    expect(outcomes.every((o) => o === 'served' || o === 402)).toBe(true);
    await h.t.gateway.ledger.idle();
    const wallet = await h.t.gateway.ledger.wallet(accountId);
    expect(wallet.held).toBe(0n);
    expect(wallet.keys.get(keyId)!.spent).toBeLessThanOrEqual(parseUsd('0.05'));
    for (const settled of await settlements(accountId)) expect(BigInt(settled.captured)).toBeLessThanOrEqual(BigInt(settled.hold_amount));
  });

  it('refuses a call whose answers the key\'s cap cannot cover, before any upstream call', async () => {
    const { openai } = await client({ spend_cap_usd: '0.05' });
    // 128 answers of 1,000 tokens: $0.256, over the cap although one answer ($0.002) is not.
    const error = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }], n: 128, max_tokens: 1000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect(h.sim.requests).toHaveLength(0);
  });

  it('refuses n outside 1-128 with a 400 in the chat shape', async () => {
    const { openai } = await client();
    for (const n of [0, 129, 2.5]) {
      const error = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'x' }], n }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      const apiError = error as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(400);
      expect(apiError.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
      expect(apiError.message).toMatch(/\bn\b/);
    }
    expect(h.sim.requests).toHaveLength(0);
  });

  it('holds candidateCount answers of a generate-content call (@google/genai), streamed or not', async () => {
    const { accountId, ai } = await client();
    const contents = [{ role: 'user', parts: [{ text: 'candidates [[sim:reply_tokens:40]]' }] }];
    const response = await ai.models.generateContent({ model: 'gem-model', contents, config: { candidateCount: 3, maxOutputTokens: 40 } });
    expect(response.candidates!.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(response.usageMetadata!.candidatesTokenCount).toBe(120);
    const stream = await ai.models.generateContentStream({ model: 'gem-model', contents, config: { candidateCount: 2, maxOutputTokens: 40 } });
    let streamed = 0;
    for await (const chunk of stream) streamed = chunk.usageMetadata?.candidatesTokenCount ?? streamed;
    expect(streamed).toBe(80);
    await expect.poll(async () => (await settlements(accountId)).length).toBe(2);
    const [first, second] = await settlements(accountId);
    const prompt = promptEstimate({ contents });
    expect(BigInt(first!.hold_amount)).toBe(expectedCost(prompt, 0, 3 * 40));
    expect(BigInt(second!.hold_amount)).toBe(expectedCost(prompt, 0, 2 * 40));
    for (const settled of [first!, second!]) {
      expect(settled.call.status).toBe('success');
      expect(BigInt(settled.captured)).toBeLessThanOrEqual(BigInt(settled.hold_amount));
    }
  });

  it('refuses candidateCount outside 1-8 with a 400 in the generate-content shape', async () => {
    const { ai } = await client();
    for (const candidateCount of [0, 9]) {
      const error = await ai.models.generateContent({ model: 'gem-model', contents: 'x', config: { candidateCount } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(400);
      expect(JSON.parse((error as ApiError).message)).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
    }
    expect(h.sim.requests).toHaveLength(0);
  });

  it('holds a translated call for the prompt and the answers its channel is asked for', async () => {
    const { accountId, openai, ai } = await client();
    const messages = [{ role: 'user' as const, content: 'translated [[sim:reply_tokens:20]]' }];
    const { data, response } = await openai.chat.completions.create({ model: 'cc-via-gem', messages, n: 3, max_tokens: 20 }).withResponse();
    expect(response.headers.get('x-protocol-translation')).toBe('chat-completions->generate-content');
    const toGemini = h.sim.requests.at(-1)!.body as { generationConfig?: { candidateCount?: number } };
    const asked = toGemini.generationConfig?.candidateCount ?? 1;
    // Either the translation carries n (and the client gets every answer) or it says it dropped it.
    if (asked === 1) expect(response.headers.get('x-protocol-warning')?.split(', ')).toContain('n');
    expect(data.choices).toHaveLength(asked);

    const contents = [{ role: 'user', parts: [{ text: 'translated back [[sim:reply_tokens:20]]' }] }];
    const answer = await ai.models.generateContent({ model: 'gem-via-cc', contents, config: { candidateCount: 2, maxOutputTokens: 20 } });
    const toChat = h.sim.requests.at(-1)!.body as { n?: number };
    expect(answer.candidates).toHaveLength(toChat.n ?? 1);

    // The channel counts the prompt it was sent, re-encoded: the hold estimates that one.
    const [first, second] = await settlements(accountId);
    expect(BigInt(first!.hold_amount)).toBe(expectedCost(promptTokens('generate-content', toGemini), 0, asked * 20));
    expect(BigInt(second!.hold_amount)).toBe(expectedCost(promptTokens('chat-completions', toChat), 0, (toChat.n ?? 1) * 20));
    for (const settled of [first!, second!]) expect(BigInt(settled.captured)).toBeLessThanOrEqual(BigInt(settled.hold_amount));
  });
});
