import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
import { promptTokens } from '../../src/simulator';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

let h: SimulatedGateway;
let openai: OpenAI;
let key: string;
beforeAll(async () => {
  h = await startSimulatedGateway(chatConfig, { chatTimeoutMs: 5000 });
  key = (await h.t.accountWithKey()).key;
  openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());

describe('GET /v1/models/{id}', () => {
  it('answers one model by id or alias, 404 for an unknown one or one the key may not call', async () => {
    expect(await openai.models.retrieve('chat-model')).toMatchObject({ id: 'chat-model', object: 'model', owned_by: 'test' });
    expect((await openai.models.retrieve('chat-model-2024')).id).toBe('chat-model');
    const missing = (await openai.models.retrieve('no-such-model').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(missing.status).toBe(404);
    expect(missing.error).toMatchObject({ code: 'not_found' });
    const limited = new OpenAI({ apiKey: (await h.t.accountWithKey({ allowed_models: ['msg-model'] })).key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    expect(((await limited.models.retrieve('chat-model').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>).status).toBe(404);
    expect((await limited.models.retrieve('msg-model')).id).toBe('msg-model');
  });
});

describe('x-request-id', () => {
  it('is echoed on chat answers, streamed or not, and on refusals', async () => {
    const plain = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-request-id': 'client-req-1' } }).withResponse();
    expect(plain.response.headers.get('x-request-id')).toBe('client-req-1');
    const streamed = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], stream: true }, { headers: { 'x-request-id': 'client-req-2' } }).withResponse();
    for await (const _chunk of streamed.data) void _chunk;
    expect(streamed.response.headers.get('x-request-id')).toBe('client-req-2');
    const refused = await fetch(`${h.baseUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'client-req-3' }, body: '{}' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('x-request-id')).toBe('client-req-3');
    // One that is not visible ASCII within 200 characters is not echoed: the gateway's own id is sent instead.
    const unechoed = await fetch(`${h.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'x'.repeat(201) } });
    expect(unechoed.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  });
});

describe('x-request-id without one from the client (issue 33)', () => {
  it("is on every answer: the gateway's request id, the one the call log's row and x-gateway-trace show", async () => {
    const { accountId, key: own } = await h.t.accountWithKey();
    const client = new OpenAI({ apiKey: own, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion._request_id).toMatch(/^req_[0-9a-f]{32}$/);
    const streamed = await client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], stream: true }).withResponse();
    for await (const _chunk of streamed.data) void _chunk;
    const streamedId = streamed.response.headers.get('x-request-id');
    expect(streamedId).toBe(streamed.response.headers.get('x-gateway-trace'));
    const refused = (await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(refused.status).toBe(400);
    expect(refused.requestID).toMatch(/^req_/);
    await h.t.gateway.ledger.idle();
    await h.t.gateway.runner.catchUpToHead();
    const rows = ((await h.t.admin('GET', `/accounts/${accountId}/logs`)).json() as { data: Array<{ request_id: string }> }).data;
    expect(rows.map((r) => r.request_id).sort()).toEqual([completion._request_id, streamedId, refused.requestID].sort());

    // Answers without a call-log row carry one too: a refused key, no route, a free read, the admin API, health, a bad URL.
    const answers = [
      await fetch(`${h.baseUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
      await fetch(`${h.baseUrl}/v1/no-such-route`, { headers: { authorization: `Bearer ${own}` } }),
      await fetch(`${h.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${own}` } }),
      await fetch(`${h.baseUrl}/admin/v1/accounts/${accountId}`, { headers: { authorization: 'Bearer test-admin-token' } }),
      await fetch(`${h.baseUrl}/healthz`),
      // A URL the router cannot take (a malformed percent-encoding): answered before any hook.
      await fetch(`${h.baseUrl}/v1/models/%E0%A4%A`, { headers: { authorization: `Bearer ${own}` } }),
    ];
    for (const answer of answers) expect(answer.headers.get('x-request-id'), answer.url).toMatch(/^req_[0-9a-f]{32}$/);
    expect(new Set(answers.map((a) => a.headers.get('x-request-id'))).size).toBe(answers.length);
  });
});

describe('token counting (free): the upstream count when a channel speaks the protocol, else a local estimate', () => {
  const counts = () => h.sim.requests.filter((r) => r.path.endsWith('/count_tokens') || r.path.endsWith(':countTokens'));

  it('POST /v1/messages/count_tokens is asked of a Messages channel, with its upstream model id, and answers the Anthropic SDK', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const before = counts().length;
    const request = { model: 'msg-model', system: 'Be brief.', messages: [{ role: 'user' as const, content: 'hi '.repeat(400) }] };
    const long = await anthropic.messages.countTokens(request);
    const asked = counts().slice(before);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.path).toBe('/msg-a/v1/messages/count_tokens');
    expect(asked[0]!.body).toMatchObject({ model: 'msg-model-upstream', system: 'Be brief.' });
    expect(long.input_tokens).toBe(promptTokens('messages', request));
    const short = await anthropic.messages.countTokens({ model: 'msg-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens + 250);
    const unknown = (await anthropic.messages.countTokens({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(unknown.status).toBe(400);
  });

  it('an upstream that fails its count, or a model with no channel of the protocol, gets the local estimate', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });
    const request = { model: 'msg-model', messages: [{ role: 'user' as const, content: 'a question with a few words in it' }] };
    h.sim.enqueueFor({ pathPrefix: '/msg-a' }, 'http_500');
    const before = counts().length;
    const estimated = await anthropic.messages.countTokens(request);
    expect(counts().length).toBe(before + 1);
    expect(estimated.input_tokens).toBeGreaterThan(0);
    // The same prompt on a model served only by a Chat Completions channel: counted locally, nothing asked.
    const local = await anthropic.messages.countTokens({ ...request, model: 'chat-model' });
    expect(counts().length).toBe(before + 1);
    expect(local.input_tokens).toBe(estimated.input_tokens);
  });

  it('Gemini :countTokens is asked of a Gemini channel and answers the @google/genai SDK', async () => {
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: h.baseUrl } });
    const before = counts().length;
    const counted = await ai.models.countTokens({ model: 'gem-model', contents: 'hello there, how are you today?' });
    const asked = counts().slice(before);
    expect(asked.map((r) => r.path)).toEqual(['/gem-a/v1beta/models/gem-model-upstream:countTokens']);
    expect(counted.totalTokens).toBe(promptTokens('generate-content', asked[0]!.body));
    expect(counted.totalTokens).toBeGreaterThan(0);
  });
});
