import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
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
    const unechoed = await fetch(`${h.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'x'.repeat(201) } });
    expect(unechoed.headers.get('x-request-id')).toBeNull();
  });
});
