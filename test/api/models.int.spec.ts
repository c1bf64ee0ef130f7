import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

describe('GET /v1/models', () => {
  it('lists every registry entry, media and placeholders included', async () => {
    const { key } = await t.accountWithKey();
    const response = await t.gateway.app.inject({ method: 'GET', url: '/v1/models', headers: { 'x-api-key': key } });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(t.gateway.registry.models.map((m) => m.id));
    for (const entry of body.data) expect(Object.keys(entry).sort()).toEqual(['created', 'id', 'object', 'owned_by']);
    expect(body.data[0]).toMatchObject({ object: 'model', created: 0 });
    const kinds = new Set(t.gateway.registry.models.map((m) => m.kind));
    expect(kinds.has('image') && kinds.has('video') && kinds.has('embedding')).toBe(true);
  });

  it('filters by the key allow-list (aliases resolve), and an empty list shows nothing', async () => {
    const aliased = t.gateway.registry.models.find((m) => m.aliases.length > 0)!;
    const { key } = await t.accountWithKey({ allowed_models: ['gpt-4o-mini', aliased.aliases[0]] });
    const body = (await t.gateway.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${key}` } })).json();
    expect(body.data.map((m: { id: string }) => m.id).sort()).toEqual([...new Set(['gpt-4o-mini', aliased.id])].sort());
    const { key: none } = await t.accountWithKey({ allowed_models: [] });
    expect((await t.gateway.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${none}` } })).json().data).toEqual([]);
  });
});

describe('GET /api/v1/models/public', () => {
  it('needs no key and carries prices, capabilities, callable, endpoint_type, supported_protocols', async () => {
    const response = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/models/public' });
    expect(response.statusCode).toBe(200);
    const models = response.json().models as Array<Record<string, unknown>>;
    expect(models).toHaveLength(t.gateway.registry.models.length);
    const mini = models.find((m) => m.id === 'gpt-4o-mini')!;
    expect(mini).toMatchObject({ callable: true, endpoint_type: null, kind: 'text' });
    expect(mini.price).toMatchObject({ input: expect.any(String), output: expect.any(String), cached_input: expect.any(String) });
    expect(mini.supported_protocols).toEqual(expect.arrayContaining(['chat-completions']));
    const placeholder = models.find((m) => m.callable === false)!;
    expect(placeholder.supported_protocols).toEqual([]);
    const image = models.find((m) => m.kind === 'image')!;
    expect(image.endpoint_type).toBe('images_generations');
    expect(image.price).toHaveProperty('per_image');
  });

  it('computes supported_protocols from the channel wiring', async () => {
    const config = {
      models: [
        { id: 'm-a', owned_by: 'x', kind: 'text' as const, aliases: ['m-a-old'], callable: true, endpoint_type: null, capabilities: [], price: { input: '1', output: '2' } },
        { id: 'm-b', owned_by: 'x', kind: 'text' as const, aliases: [], callable: true, endpoint_type: null, capabilities: [], price: { input: '1', output: '2' } },
        { id: 'm-c', owned_by: 'x', kind: 'text' as const, aliases: [], callable: true, endpoint_type: null, capabilities: [], price: { input: '1', output: '2' } },
      ],
      channels: [
        { id: 'c1', protocol: 'messages' as const, base_url: 'http://127.0.0.1:1', api_key: '', group: 'default', priority: 0, weight: 1, models: ['m-a'], tools: [], translation: false },
        // Translation for the responses protocol only: generate-content has no path.
        { id: 'c2', protocol: 'chat-completions' as const, base_url: 'http://127.0.0.1:1', api_key: '', group: 'default', priority: 0, weight: 1, models: { 'm-a': 'up-a' }, tools: [], translation: ['responses' as const] },
        // No `translation`: every chat protocol.
        { id: 'c3', protocol: 'generate-content' as const, base_url: 'http://127.0.0.1:1', api_key: '', group: 'default', priority: 0, weight: 1, models: ['m-c'], tools: [] },
      ],
    };
    const own = await startTestGateway({ config });
    try {
      const models = (await own.gateway.app.inject({ method: 'GET', url: '/api/v1/models/public' })).json().models;
      expect(models.find((m: { id: string }) => m.id === 'm-a').supported_protocols).toEqual(['chat-completions', 'messages', 'responses']);
      expect(models.find((m: { id: string }) => m.id === 'm-c').supported_protocols).toEqual(['chat-completions', 'messages', 'responses', 'generate-content']);
      expect(models.find((m: { id: string }) => m.id === 'm-b').supported_protocols).toEqual([]);
      const byAlias = (await own.gateway.app.inject({ method: 'GET', url: '/api/v1/models/public?id=m-a-old' })).json().models;
      expect(byAlias.map((m: { id: string }) => m.id)).toEqual(['m-a']);
    } finally {
      await own.close();
    }
  });

  it('lists the cache-write multipliers billing uses: the 1-hour one defaults to 2 where writes are charged', async () => {
    const text = (id: string, extra: object) => ({ id, owned_by: 'x', kind: 'text' as const, aliases: [], callable: true, endpoint_type: null, capabilities: [], price: { input: '3', output: '15' }, ...extra });
    const own = await startTestGateway({
      config: {
        models: [text('writes', { cache_write_multiplier: '1.25' }), text('tuned', { cache_write_multiplier: '1.25', cache_write_1h_multiplier: '1.5' }), text('plain', {})],
        channels: [],
      },
    });
    try {
      const models = (await own.gateway.app.inject({ method: 'GET', url: '/api/v1/models/public' })).json().models as Array<Record<string, unknown>>;
      const byId = (id: string) => models.find((m) => m.id === id)!;
      expect(byId('writes')).toMatchObject({ cache_write_multiplier: '1.25', cache_write_1h_multiplier: '2' });
      expect(byId('tuned')).toMatchObject({ cache_write_multiplier: '1.25', cache_write_1h_multiplier: '1.5' });
      expect(byId('plain')).not.toHaveProperty('cache_write_multiplier');
      expect(byId('plain')).not.toHaveProperty('cache_write_1h_multiplier');
    } finally {
      await own.close();
    }
  });
});
