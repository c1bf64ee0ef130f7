/**
 * `POST /v1/embeddings` (spec: "no model currently available"; calling returns 404 `model_not_found`):
 * authenticated first, then 404 `model_not_found` in the chat shape, also for an embedding model the
 * catalogue lists as callable with a channel. Driven with the openai SDK.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

/** An embedding model that looks callable: listed, callable, with a channel of the embeddings protocol. */
function withEmbeddingModel(sim: Simulator): GatewayConfig {
  return {
    models: [
      { id: 'text-embedding-3-small', owned_by: 'openai', kind: 'embedding', endpoint_type: 'embeddings', aliases: [], callable: true, capabilities: [], price: { input: '0.02' } },
      { id: 'chat-model', owned_by: 'test', kind: 'text', endpoint_type: null, aliases: [], callable: true, capabilities: [], default_max_tokens: 100, price: { input: '1.00', output: '2.00' } },
    ],
    channels: [
      { id: 'emb', protocol: 'embeddings', base_url: `${sim.url}/emb`, api_key: 'key-emb', group: 'default', priority: 0, weight: 1, models: ['text-embedding-3-small'], tools: [] },
      { id: 'cc', protocol: 'chat-completions', base_url: `${sim.url}/cc`, api_key: 'key-cc', group: 'default', priority: 0, weight: 1, models: ['chat-model'], tools: [] },
    ],
  };
}

let g: SimulatedGateway;
beforeAll(async () => {
  g = await startSimulatedGateway(withEmbeddingModel);
});
afterAll(() => g.close());

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${g.baseUrl}/v1`, maxRetries: 0 });

async function refusal(apiKey: string, model: string) {
  const error = await sdk(apiKey)
    .embeddings.create({ model, input: 'hello' })
    .then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

describe('POST /v1/embeddings', () => {
  it('without a valid key: 401 invalid_api_key, before anything else', async () => {
    const error = await refusal('sk-not-a-key', 'text-embedding-3-small');
    expect(error.status).toBe(401);
    expect(error.error).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
    const none = await fetch(`${g.baseUrl}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"x","input":"y"}' });
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
  });

  it('with a key: 404 model_not_found in the chat shape, for the catalogue\'s embedding model and any other id, nothing sent upstream or billed', async () => {
    const { key, accountId } = await g.t.accountWithKey();
    const before = await g.t.gateway.ledger.wallet(accountId);
    for (const model of ['text-embedding-3-small', 'no-such-model', 'chat-model']) {
      const error = await refusal(key, model);
      expect(error.status, model).toBe(404);
      expect(error.error, model).toEqual({ code: 'model_not_found', type: 'invalid_request_error', message: expect.stringContaining('Embeddings are not served') });
    }
    expect(g.sim.requests.filter((r) => r.path.startsWith('/emb'))).toHaveLength(0);
    const after = await g.t.gateway.ledger.wallet(accountId);
    expect(after).toMatchObject({ balance: before.balance, held: 0n });
  });
});
