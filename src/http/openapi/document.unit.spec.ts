import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { UnixSecondsQuery } from '../intake/numbers';
import { openApiDocument, type DescribedRoute } from './document';
import { AUTOMATIC_HEAD, openApiPlugin } from './plugin';
import type { RouteDoc } from './route-doc';

const doc = (extra: Partial<RouteDoc> = {}): RouteDoc => ({ operationId: 'op', summary: 'an operation', tags: ['account'], responses: { 200: { description: 'ok' } }, ...extra });
const route = (method: string, url: string, settings: DescribedRoute['settings'], docs: RouteDoc[] = [doc()]): DescribedRoute => ({ method, url, settings, docs });
const operation = (r: DescribedRoute) => {
  const document = openApiDocument([r], '1.2.3');
  const [item] = Object.values(document.paths);
  return item![r.method.toLowerCase()] as Record<string, any>;
};

describe('the operation of a route', () => {
  it('security: the spec key lookup order, header-only keys, the admin token, public routes', () => {
    expect(operation(route('POST', '/v1/chat/completions', { auth: 'key' })).security).toEqual([
      { apiKeyHeader: [] },
      { vendorApiKeyHeader: [] },
      { googApiKeyHeader: [] },
      { apiKeyQuery: [] },
      { bearerApiKey: [] },
    ]);
    expect(operation(route('GET', '/v1/models', { auth: 'key', headerKeyOnly: true })).security).toEqual([{ apiKeyHeader: [] }, { bearerApiKey: [] }]);
    expect(operation(route('GET', '/admin/v1/accounts', {})).security).toEqual([{ adminToken: [] }]);
    expect(operation(route('GET', '/api/v1/models/public', { auth: 'none' })).security).toEqual([]);
    expect(operation(route('GET', '/metrics', { auth: 'none' }, [doc({ security: [{}, { metricsToken: [] }] })])).security).toEqual([{}, { metricsToken: [] }]);
  });

  it('automatic refusals follow the route settings', () => {
    const statuses = (r: DescribedRoute) => Object.keys(operation(r).responses);
    const body = doc({ body: { json: z.object({ a: z.string() }) } });
    expect(statuses(route('POST', '/v1/chat/completions', { auth: 'key', shape: 'chat' }, [body]))).toEqual(['200', '400', '401', '402', '413', '429', 'default']);
    // Free: no 402; outside /v1 and /v1beta: no 429; no body or query: no 400.
    expect(statuses(route('GET', '/api/v1/usage', { auth: 'key', free: true }))).toEqual(['200', '401', 'default']);
    expect(statuses(route('GET', '/v1/key/balance', { auth: 'key', free: true, rateLimited: false }))).toEqual(['200', '401', 'default']);
    expect(statuses(route('GET', '/v1/models', { auth: 'key', free: true }))).toEqual(['200', '401', '429', 'default']);
    const messages = operation(route('POST', '/v1/messages', { auth: 'key', shape: 'messages' }, [body]));
    expect(messages.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/MessagesError' });
    expect(operation(route('POST', '/admin/v1/accounts', {}, [body])).responses.default.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/AdminError',
    });
  });

  it('Idempotency-Key on idempotent routes and every admin POST, with its 409', () => {
    const names = (o: Record<string, any>) => (o.parameters ?? []).map((p: { name: string }) => p.name);
    const images = operation(route('POST', '/v1/images/generations', { auth: 'key', idempotent: true }));
    expect(names(images)).toEqual(['Idempotency-Key']);
    expect(images.responses['409']).toBeDefined();
    expect(names(operation(route('POST', '/admin/v1/accounts', {})))).toEqual(['Idempotency-Key']);
    expect(names(operation(route('PATCH', '/admin/v1/keys/:id', {})))).toEqual(['id']);
    expect(names(operation(route('POST', '/v1/chat/completions', { auth: 'key' })))).toEqual([]);
  });

  it('path and query parameters; a request body with the intake rules of its body class', () => {
    const query = z.looseObject({ from: UnixSecondsQuery.describe('start'), scope: z.enum(['a', 'b']) });
    const get = operation(route('GET', '/admin/v1/accounts/:id/logs', {}, [doc({ query })]));
    expect(get.parameters).toEqual([
      { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
      { name: 'from', in: 'query', required: false, description: 'start', schema: { type: 'string', pattern: '^\\d{0,30}$', description: 'start' } },
      { name: 'scope', in: 'query', required: true, schema: { type: 'string', enum: ['a', 'b'] } },
    ]);
    const body = z.object({ name: z.string().min(1) }).strict();
    const post = operation(route('POST', '/admin/v1/accounts', {}, [doc({ body: { json: body } })]));
    expect(post.requestBody).toEqual({
      description: 'At most 8 MB. No NUL (U+0000) anywhere in it.',
      required: true,
      content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'], additionalProperties: false } } },
    });
    expect(operation(route('POST', '/v1/chat/completions', { auth: 'key' }, [doc({ body: { json: body } })])).requestBody.description).toBe('At most 8 MB.');
  });

  it('a wildcard route names its path; two descriptions of one operation are refused', () => {
    expect(() => openApiDocument([route('POST', '/v1beta/models/*', { auth: 'key' })], '1')).toThrow(/wildcard/);
    const two = route('POST', '/v1beta/models/*', { auth: 'key' }, [doc({ path: '/v1beta/models/{model}:a' }), doc({ path: '/v1beta/models/{model}:a' })]);
    expect(() => openApiDocument([two], '1')).toThrow(/described twice/);
  });
});

describe('the plugin', () => {
  it('records every route, enforces a declared query and hands the handler its parsed values', async () => {
    const app = Fastify();
    await app.register(openApiPlugin, { version: '9.9.9' });
    const query = z.looseObject({ from: UnixSecondsQuery });
    app.get('/v1/things', { config: { auth: 'none', openapi: doc({ operationId: 'things', query }) } }, async (request) => ({ from: (request.query as { from?: number }).from ?? null }));
    app.post('/v1/plain', async () => ({}));
    await app.ready();

    expect(app.openApi.routes().map((r) => [r.method, r.url, r.excluded ?? null, r.docs.length])).toEqual([
      ['GET', '/openapi.json', null, 1],
      ['HEAD', '/openapi.json', AUTOMATIC_HEAD, 1],
      ['GET', '/v1/things', null, 1],
      ['HEAD', '/v1/things', AUTOMATIC_HEAD, 1],
      ['POST', '/v1/plain', null, 0],
    ]);
    expect((await app.inject({ method: 'GET', url: '/v1/things?from=17' })).json()).toEqual({ from: 17 });
    const refused = await app.inject({ method: 'GET', url: '/v1/things?from=-1' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toBe('from: must be Unix seconds: a whole number from 0 to 9007199254740991');

    const served = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(served.statusCode).toBe(200);
    expect(served.json().info.version).toBe('9.9.9');
    expect(Object.keys(served.json().paths)).toEqual(['/openapi.json', '/v1/things']);
    await app.close();
  });
});
