import { ApiError, GoogleGenAI, type Model } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChatHarness, type ChatHarness } from './support';

// Issue 33, item 4: the generate-content SDK's model routes. `ai.models.list()` and `ai.models.get()` of
// @google/genai read GET /v1beta/models and /v1beta/models/{model}: the catalogue in the vendor's shape,
// the key's allow-list applied.

let h: ChatHarness;
beforeAll(async () => {
  h = await startChatHarness();
});
afterAll(() => h.close());

const CATALOGUE = ['chat-model', 'msg-model', 'resp-model', 'gem-model', 'long-model', 'orphan-model', 'placeholder', 'img-model'];
const genai = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: h.baseUrl } });

async function all(ai: GoogleGenAI, pageSize?: number): Promise<{ models: Model[]; pages: number }> {
  const pager = await ai.models.list(pageSize ? { config: { pageSize } } : {});
  const models: Model[] = [];
  let pages = 1;
  for (;;) {
    models.push(...pager.page);
    if (!pager.hasNextPage()) return { models, pages };
    await pager.nextPage();
    pages += 1;
  }
}

describe('GET /v1beta/models (ai.models.list)', () => {
  it('lists the catalogue as models/{id}, with the methods this endpoint serves each model with', async () => {
    const { key } = await h.t.accountWithKey();
    const { models } = await all(genai(key));
    expect(models.map((m) => m.name)).toEqual(CATALOGUE.map((id) => `models/${id}`));
    const gem = models.find((m) => m.name === 'models/gem-model')!;
    expect(gem).toMatchObject({ displayName: 'gem-model', outputTokenLimit: 1000 });
    expect(gem.supportedActions).toEqual(['generateContent', 'streamGenerateContent', 'countTokens']);
    // No channel of this protocol (translation is off in this catalogue), an image model, a placeholder: none.
    for (const id of ['chat-model', 'img-model', 'placeholder']) expect(models.find((m) => m.name === `models/${id}`)!.supportedActions, id).toEqual([]);
  });

  it('pages with pageSize and nextPageToken', async () => {
    const { key } = await h.t.accountWithKey();
    const { models, pages } = await all(genai(key), 3);
    expect(pages).toBe(3);
    expect(models.map((m) => m.name)).toEqual(CATALOGUE.map((id) => `models/${id}`));
    const bad = await fetch(`${h.baseUrl}/v1beta/models?pageToken=zzz`, { headers: { 'x-goog-api-key': key } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
  });

  it("applies the key's allow-list (aliases included)", async () => {
    const { key } = await h.t.accountWithKey({ allowed_models: ['gem-model', 'chat-model-2024'] });
    expect((await all(genai(key))).models.map((m) => m.name)).toEqual(['models/chat-model', 'models/gem-model']);
  });

  it('answers 401 in the generate-content shape without a valid key', async () => {
    const refused = (await genai('sk-nope').models.list().catch((e: unknown) => e)) as ApiError;
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused.status).toBe(401);
  });
});

describe('GET /v1beta/models/{model} (ai.models.get)', () => {
  it('answers one model by id or alias, 404 NOT_FOUND past the allow-list or for an unknown id', async () => {
    const { key } = await h.t.accountWithKey({ allowed_models: ['gem-model'] });
    const ai = genai(key);
    expect(await ai.models.get({ model: 'gem-model' })).toMatchObject({ name: 'models/gem-model', supportedActions: ['generateContent', 'streamGenerateContent', 'countTokens'] });
    expect((await ai.models.get({ model: 'models/gem-model-2024' })).name).toBe('models/gem-model');
    for (const model of ['chat-model', 'no-such-model']) {
      const missing = (await ai.models.get({ model }).catch((e: unknown) => e)) as ApiError;
      expect(missing, model).toBeInstanceOf(ApiError);
      expect(missing.status).toBe(404);
      expect(JSON.parse(missing.message)).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
    }
  });

  it('is in the OpenAPI document, with :countTokens', async () => {
    const doc = (await h.t.gateway.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { operationId: string }>> };
    expect(doc.paths['/v1beta/models']?.get?.operationId).toBe('listGenerateContentModels');
    expect(doc.paths['/v1beta/models/{model}']?.get?.operationId).toBe('getGenerateContentModel');
    expect(doc.paths['/v1beta/models/{model}:countTokens']?.post?.operationId).toBe('countContentTokens');
  });
});
