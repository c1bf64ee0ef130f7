/**
 * Routing of translated calls: the catalogue's supported_protocols, native first, 503 only when no
 * path exists, the translation headers, upstream errors in the client's shape, failover across
 * channel protocols, and a failing stream ending in the client's own error frame.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { settlements, startHarness, type Harness } from './sdk-support';

let h: Harness;
let key: string;
let accountId: string;
beforeAll(async () => {
  h = await startHarness();
  ({ key, accountId } = await h.t.accountWithKey());
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${h.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers }, body: JSON.stringify(body) });
const user = (text: string) => [{ role: 'user', content: text }];

describe('translated routing', () => {
  it('lists every protocol with a path in supported_protocols, native or translated', async () => {
    const models = (await (await fetch(`${h.baseUrl}/api/v1/models/public`)).json()) as { models: { id: string; supported_protocols: string[] }[] };
    const of = (id: string) => models.models.find((m) => m.id === id)!.supported_protocols;
    const all = ['chat-completions', 'messages', 'responses', 'generate-content'];
    expect(of('oa-only')).toEqual(all);
    expect(of('an-only')).toEqual(all);
    expect(of('native-only')).toEqual(['chat-completions']);
  });

  it('answers 503 no_channel_available only when no channel translates', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const error = await anthropic.messages.create({ model: 'native-only', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(error.status).toBe(503);
    expect(error.error.error.type).toBe('overloaded_error');
    expect(h.sim.requests).toHaveLength(0);
  });

  it('prefers a native channel, and says nothing about translation then', async () => {
    const native = await post('/v1/chat/completions', { model: 'both', messages: user('hi') });
    expect(native.status).toBe(200);
    expect(native.headers.get('x-protocol-translation')).toBeNull();
    expect(h.sim.requests.at(-1)!.path).toBe('/oa-1/v1/chat/completions');
    const translated = await post('/v1/responses', { model: 'both', input: 'hi' });
    expect(translated.status).toBe(200);
    expect(translated.headers.get('x-protocol-translation')).toMatch(/^responses->(chat-completions|messages)$/);
  });

  it('lists each dropped request field in X-Protocol-Warning', async () => {
    const response = await post('/v1/chat/completions', {
      model: 'an-only',
      messages: user('hi'),
      seed: 7,
      logit_bias: { '50256': -100 },
      response_format: { type: 'json_object' },
      user: null,
      'größe': 1,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-protocol-translation')).toBe('chat-completions->messages');
    expect(response.headers.get('x-protocol-warning')!.split(', ').sort()).toEqual(['gr??e', 'logit_bias', 'response_format', 'seed']);
    // What could be carried was: the Anthropic upstream got the conversation, not the dropped fields.
    const forwarded = h.sim.requests.at(-1)!.body as Record<string, unknown>;
    expect(forwarded).toMatchObject({ model: 'an-only-upstream', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
    expect(forwarded).not.toHaveProperty('seed');
  });

  it("renders an upstream error in the client's protocol shape, with its status and message, billing nothing", async () => {
    const before = (await h.t.gateway.ledger.wallet(accountId)).balance;
    h.sim.enqueue('http_400');
    const messagesClient = await post('/v1/messages', { model: 'oa-only', max_tokens: 50, messages: user('hi') }, { 'anthropic-version': '2023-06-01' });
    expect(messagesClient.status).toBe(400);
    expect(messagesClient.headers.get('x-protocol-translation')).toBe('messages->chat-completions');
    const body = (await messagesClient.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('api_error');
    expect(body.error.message.length).toBeGreaterThan(0);

    h.sim.enqueue('http_429');
    const gemini = await post('/v1beta/models/an-only:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    expect(gemini.status).toBe(429);
    expect(await gemini.json()).toMatchObject({ error: { code: 429, status: 'UNAVAILABLE' } });
    await h.t.gateway.ledger.idle();
    expect((await h.t.gateway.ledger.wallet(accountId)).balance).toBe(before);
  });

  it('fails over from a channel of one protocol to a channel of another', async () => {
    h.sim.enqueue('http_500');
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const { data, response } = await anthropic.messages.create({ model: 'two-ways', max_tokens: 50, messages: [{ role: 'user', content: 'after failover' }] }).withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'Echo: after failover' }]);
    expect(response.headers.get('x-protocol-translation')).toBe('messages->generate-content');
    expect(h.sim.requests.map((r) => r.path.split('/')[1])).toEqual(['tw-1', 'tw-2']);
  });

  it('refuses a built-in tool that only the channel protocol could run', async () => {
    const response = await post('/v1/responses', { model: 'oa-only', input: 'search', tools: [{ type: 'web_search' }] });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'tool_not_supported' } });
  });

  it("ends a stream that failed upstream with the client protocol's error, settled as interrupted", async () => {
    const { accountId: own, key: ownKey } = await h.t.accountWithKey();
    const openai = new OpenAI({ apiKey: ownKey, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    h.sim.enqueue('error_frame_after:3');
    const failure = await openai.chat.completions
      .stream({ model: 'an-only', messages: [{ role: 'user', content: 'one two three four five six' }] })
      .finalChatCompletion()
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    const [settled] = await settlements(h, own, 1);
    expect(settled!.call.status).toBe('interrupted');
  });

  it('streams to a Gemini client as one JSON array without ?alt=sse', async () => {
    const response = await post('/v1beta/models/oa-only:streamGenerateContent', { contents: [{ role: 'user', parts: [{ text: 'one two three' }] }] });
    expect(response.status).toBe(200);
    const chunks = (await response.json()) as { candidates: { content: { parts: { text?: string }[] }; finishReason?: string }[]; usageMetadata?: unknown }[];
    expect(chunks.map((c) => c.candidates[0]!.content.parts.map((p) => p.text ?? '').join('')).join('')).toBe('Echo: one two three');
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe('STOP');
    expect(chunks.at(-1)!.usageMetadata).toBeDefined();
  });

  it('closes the JSON array after an in-protocol error element, as a native Gemini stream ends', async () => {
    h.sim.enqueue('error_frame_after:3');
    const response = await post('/v1beta/models/oa-only:streamGenerateContent', { contents: [{ role: 'user', parts: [{ text: 'one two three four five' }] }] });
    expect(response.status).toBe(200);
    const elements = (await response.json()) as Array<{ error?: { code: number; status: string } }>;
    expect(elements.at(-1)!.error).toMatchObject({ code: expect.any(Number), status: expect.any(String) });
  });
});
