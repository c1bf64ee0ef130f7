/**
 * Issue 18, item 5: `/openapi.json` describes every route the gateway registers, is a valid OpenAPI 3.1
 * document, and the request schemas it describes are the ones the routes enforce. On PGlite, or on
 * Postgres and Redis when DATABASE_URL / REDIS_URL are set. FC_RUNS caps the property runs.
 */
import { randomBytes } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { requestSchema } from '../../src/http/openapi/document';
import { AUTOMATIC_HEAD, type RegisteredRoute } from '../../src/http/openapi/plugin';
import { chatCompletions } from '../../src/upstream/protocols/chat-completions';
import { generateContent } from '../../src/upstream/protocols/generate-content';
import { GenerateCountTokensBody } from '../../src/http/protocols/count-tokens';
import { messages } from '../../src/upstream/protocols/messages';
import { responses } from '../../src/upstream/protocols/responses';
import { zodMessage } from '../../src/config/zod-message';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { schemaArbitraries, type Schema } from '../support/json-schema-arbitrary';
import { OPENAPI_31_STRUCTURE } from '../support/openapi-structure';

type Json = Record<string, any>;

const RUNS = Math.min(Number(process.env.FC_RUNS ?? 25), 25);
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let t: TestGateway;
let doc: Json;
let registered: readonly RegisteredRoute[];
let key: string;
let accountId: string;

beforeAll(async () => {
  t = await startTestGateway(
    process.env.REDIS_URL ? { rateLimits: { redisUrl: process.env.REDIS_URL, keyPrefix: `gw:test:openapi:${randomBytes(6).toString('hex')}:` } } : {},
  );
  await t.gateway.app.ready();
  const response = await t.gateway.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(response.statusCode).toBe(200);
  doc = response.json();
  registered = t.gateway.app.openApi.routes();
  ({ key, accountId } = await t.accountWithKey());
});

afterAll(async () => {
  await t?.close();
});

/** Every operation of the document: method, path and the operation object. */
function operations(): { method: string; path: string; op: Json }[] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Json })),
  );
}

/** The routes printRoutes' tree shows, as `METHOD path` with parameter names left out. */
function printedRoutes(tree: string): Set<string> {
  const stack: string[] = [];
  const found = new Set<string>();
  for (const line of tree.split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    for (const method of match[3]?.split(', ') ?? []) found.add(`${method} ${normalized(stack.join(''))}`);
  }
  return found;
}
const normalized = (url: string) => url.replace(/:[A-Za-z0-9_]+(\|:[A-Za-z0-9_]+)*/g, ':');

/** Whether a fastify route's URL takes an OpenAPI path (its templates filled in). */
function routeTakes(url: string, path: string): boolean {
  const pattern = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${pattern}$`).test(path.replace(/\{[^}]+\}/g, 'sample'));
}

function routeOf(method: string, path: string): RegisteredRoute {
  const candidates = registered.filter((r) => r.method === method && r.excluded === undefined && routeTakes(r.url, path));
  // A static route wins over a parametric one that also takes its path, as in fastify's router
  // (`/v1/videos/avatars/presets` before `/v1/videos/avatars/:id`).
  const exact = candidates.filter((r) => r.url === path);
  const matching = exact.length > 0 ? exact : candidates;
  expect(matching.map((r) => r.url), `${method} ${path}`).toHaveLength(1);
  return matching[0]!;
}

describe('every registered route is described', () => {
  it('the routes the document is built from are every route fastify registered (printRoutes agrees)', () => {
    const recorded = new Set(registered.map((r) => `${r.method} ${normalized(r.url)}`));
    expect(recorded.size).toBe(registered.length);
    expect(recorded).toEqual(printedRoutes(t.gateway.app.printRoutes()));
  });

  it('each route has a description; the one exclusion is the HEAD fastify adds to each GET', () => {
    const undescribed = registered.filter((r) => r.docs.length === 0 && r.excluded === undefined).map((r) => `${r.method} ${r.url}`);
    expect(undescribed).toEqual([]);
    const excluded = registered.filter((r) => r.excluded !== undefined);
    expect(new Set(excluded.map((r) => r.excluded))).toEqual(new Set([AUTOMATIC_HEAD]));
    for (const head of excluded) {
      expect(head.method).toBe('HEAD');
      expect(registered.some((r) => r.method === 'GET' && r.url === head.url)).toBe(true);
    }
  });

  it('each route is in the document once per description, and each operation is a route', () => {
    const described = registered.filter((r) => r.excluded === undefined);
    const perRoute = new Map(described.map((r) => [r, 0]));
    for (const { method, path } of operations()) {
      const route = routeOf(method, path);
      perRoute.set(route, perRoute.get(route)! + 1);
    }
    for (const [route, count] of perRoute) expect(count, `${route.method} ${route.url}`).toBe(route.docs.length);
    // The client and admin endpoints the issue names, by their paths.
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1beta/models/{model}:generateContent', '/v1beta/models/{model}:streamGenerateContent', '/v1/images/edits', '/mcp', '/api/v1/models/public', '/admin/v1/accounts/{id}/keys', '/admin/v1/rerates', '/openapi.json'])
      expect(doc.paths[path], path).toBeDefined();
  });

  it('GET /openapi.json is public and not rate limited; the catalogue is public, the admin API takes its token', async () => {
    const limited = await t.accountWithKey();
    expect((await t.admin('PUT', `/accounts/${limited.accountId}/limits`, { rpm: 1, concurrency: null })).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) {
      const response = await t.gateway.app.inject({ method: 'GET', url: '/openapi.json', headers: { 'x-api-key': limited.key } });
      expect(response.statusCode).toBe(200);
      expect(response.headers['x-ratelimit-limit-requests']).toBeUndefined();
    }
    expect(doc.paths['/openapi.json'].get.security).toEqual([]);
    expect(doc.paths['/api/v1/models/public'].get.security).toEqual([]);
    expect(doc.paths['/admin/v1/accounts'].post.security).toEqual([{ adminToken: [] }]);
    // The spec's lookup order; GET /v1/models takes only the header and Bearer.
    expect(doc.paths['/v1/chat/completions'].post.security).toEqual([
      { apiKeyHeader: [] },
      { vendorApiKeyHeader: [] },
      { googApiKeyHeader: [] },
      { apiKeyQuery: [] },
      { bearerApiKey: [] },
    ]);
    expect(doc.paths['/v1/models'].get.security).toEqual([{ apiKeyHeader: [] }, { bearerApiKey: [] }]);
    const schemes = doc.components.securitySchemes;
    expect([schemes.apiKeyHeader.name, schemes.vendorApiKeyHeader.name, schemes.googApiKeyHeader.name, schemes.apiKeyQuery.name]).toEqual([
      'x-api-key',
      'x-vendor-api-key',
      'x-goog-api-key',
      'key',
    ]);
  });
});

/** A resolver of the document's local references (`#/components/...`). */
function resolve(ref: string): any {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  let node: any = doc;
  for (const part of ref.slice(2).split('/')) {
    node = node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`${ref} does not resolve`);
  }
  return node;
}

/** Each Schema Object of the document, with where it is. */
function schemaObjects(): { where: string; schema: Schema }[] {
  const found: { where: string; schema: Schema }[] = [];
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) found.push({ where: `components.schemas.${name}`, schema });
  for (const { method, path, op } of operations()) {
    const where = `${method} ${path}`;
    for (const p of op.parameters ?? []) found.push({ where: `${where} parameter ${p.name}`, schema: p.schema });
    for (const [type, media] of Object.entries((op.requestBody?.content ?? {}) as Json)) found.push({ where: `${where} body ${type}`, schema: media.schema });
    for (const [status, answer] of Object.entries(op.responses as Json)) {
      for (const [type, media] of Object.entries((answer.content ?? {}) as Json)) found.push({ where: `${where} ${status} ${type}`, schema: media.schema });
      for (const [name, header] of Object.entries((answer.headers ?? {}) as Json)) found.push({ where: `${where} ${status} header ${name}`, schema: header.schema });
    }
  }
  return found;
}

/** Ajv (strict) with the document's component schemas, referenced as they are in the document. */
function documentAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  ajv.addSchema({ $id: COMPONENTS, $defs: doc.components.schemas });
  return ajv;
}
const COMPONENTS = 'https://gateway.test/components';
const againstDocument = (schema: Schema) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS}#/$defs/`));

describe('a valid OpenAPI 3.1 document', () => {
  it('has the structure OpenAPI 3.1 gives its objects', () => {
    // strictRequired off: a security scheme's `then: {required}` names fields its parent declares.
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, strictRequired: false, allErrors: true });
    const validate = ajv.compile(OPENAPI_31_STRUCTURE);
    expect(validate(doc), JSON.stringify(validate.errors, null, 1)).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.jsonSchemaDialect).toBe('https://json-schema.org/draft/2020-12/schema');
  });

  it('the structure check refuses what OpenAPI refuses', () => {
    const validate = new Ajv2020({ strict: true, allowUnionTypes: true, strictRequired: false }).compile(OPENAPI_31_STRUCTURE);
    const broken: Json[] = [
      { ...doc, openapi: '3.0.3' },
      { ...doc, info: { title: 'no version' } },
      { ...doc, paths: { 'no-slash': {} } },
      { ...doc, paths: { '/x': { get: { responses: {} } } } },
      { ...doc, paths: { '/x/{id}': { get: { parameters: [{ name: 'id', in: 'path', schema: {} }], responses: { 200: { description: 'ok' } } } } } },
      { ...doc, paths: { '/x': { get: { responses: { 200: {} } } } } },
      { ...doc, paths: { '/x': { get: { responses: { 600: { description: 'no such status' } } } } } },
      { ...doc, paths: { '/x': { get: { summary: 'x', unknownField: 1, responses: { 200: { description: 'ok' } } } } } },
      { ...doc, components: { ...doc.components, securitySchemes: { k: { type: 'apiKey', name: 'x-api-key' } } } },
    ];
    for (const candidate of broken) expect(validate(candidate), JSON.stringify(candidate.paths ?? candidate.info ?? candidate.openapi).slice(0, 120)).toBe(false);
  });

  it('each Schema Object is JSON Schema 2020-12 (compiled in strict mode)', () => {
    const ajv = documentAjv();
    const all = schemaObjects();
    expect(all.length).toBeGreaterThan(100);
    for (const { where, schema } of all) expect(() => ajv.compile(againstDocument(schema)), where).not.toThrow();
  });

  it('unique operation ids; path templates match required path parameters; references resolve; schemes and tags declared', () => {
    const ids = operations().map(({ op }) => op.operationId as string);
    expect(new Set(ids).size).toBe(ids.length);
    const templates = Object.keys(doc.paths).map((path) => path.replace(/\{[^}]+\}/g, '{}'));
    expect(new Set(templates).size, 'two paths differ only in a parameter name').toBe(templates.length);

    const tags = new Set((doc.tags as Json[]).map((tag) => tag.name));
    expect(tags.size).toBe(doc.tags.length);
    const schemes = new Set(Object.keys(doc.components.securitySchemes));
    for (const { method, path, op } of operations()) {
      const where = `${method} ${path}`;
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const params = (op.parameters ?? []) as Json[];
      expect(params.filter((p) => p.in === 'path').map((p) => p.name), where).toEqual(inPath);
      const names = params.map((p) => `${p.in}:${String(p.name).toLowerCase()}`);
      expect(new Set(names).size, where).toBe(names.length);
      expect(op.tags.length, where).toBeGreaterThan(0);
      for (const tag of op.tags) expect(tags.has(tag), `${where} tag ${tag}`).toBe(true);
      for (const requirement of op.security) for (const name of Object.keys(requirement)) expect(schemes.has(name), `${where} ${name}`).toBe(true);
      expect(op.summary, where).toBeTruthy();
      expect(op.responses.default, where).toBeDefined();
    }
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(() => resolve(JSON.parse(`{${ref}}`).$ref), ref).not.toThrow();
    expect(JSON.stringify(doc)).not.toContain('"$defs"');
  });
});

/** The request schemas a route declares (its `config.openapi`): JSON bodies and queries. */
function declared(): { route: RegisteredRoute; kind: 'body' | 'multipart' | 'query'; zod: z.ZodType; jsonSchema: Json }[] {
  const out: { route: RegisteredRoute; kind: 'body' | 'multipart' | 'query'; zod: z.ZodType; jsonSchema: Json }[] = [];
  const seen = new Set<z.ZodType>();
  for (const route of registered.filter((r) => r.excluded === undefined)) {
    for (const d of route.docs) {
      const path = d.path ?? route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const op = doc.paths[path][route.method.toLowerCase()];
      if (d.body?.json && !seen.has(d.body.json)) {
        seen.add(d.body.json);
        out.push({ route, kind: 'body', zod: d.body.json, jsonSchema: op.requestBody.content['application/json'].schema });
      }
      if (d.query && !seen.has(d.query)) {
        seen.add(d.query);
        const params = (op.parameters as Json[]).filter((p) => p.in === 'query');
        const jsonSchema = { type: 'object', properties: Object.fromEntries(params.map((p) => [p.name, p.schema])), required: params.filter((p) => p.required).map((p) => p.name) };
        out.push({ route, kind: 'query', zod: d.query, jsonSchema });
      }
    }
  }
  return out;
}

/** Issues that are only refinements JSON Schema cannot state (custom checks), in a union's branch too. */
function refinementsOnly(issues: readonly z.core.$ZodIssue[]): boolean {
  return issues.every((i) => i.code === 'custom' || (i.code === 'invalid_union' && i.errors.some((branch) => branch.length > 0 && refinementsOnly(branch))));
}

/** zod's verdict, and whether a failure is only a refinement. */
function zodVerdict(schema: z.ZodType, value: unknown): { ok: true } | { ok: false; refinementOnly: boolean; message: string } {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true };
  return { ok: false, refinementOnly: refinementsOnly(parsed.error.issues), message: zodMessage(parsed.error) };
}

const arbitraries = () => schemaArbitraries((ref) => resolve(ref));

describe('the described request schema is the one enforced', () => {
  it('each request schema in the document is made from the zod schema its route declares; chat routes declare their adapter’s', () => {
    const all = declared();
    expect(all.filter((d) => d.kind === 'body').length).toBeGreaterThanOrEqual(15);
    for (const { route, kind, zod, jsonSchema } of all) if (kind === 'body') expect(jsonSchema, `${route.method} ${route.url}`).toEqual(requestSchema(zod));
    const bodyOf = (method: string, url: string) => registered.find((r) => r.method === method && r.url === url)!.docs.map((d) => d.body?.json);
    expect(bodyOf('POST', '/v1/chat/completions')).toEqual([chatCompletions.requestSchema]);
    expect(bodyOf('POST', '/v1/messages')).toEqual([messages.requestSchema]);
    expect(bodyOf('POST', '/v1/responses')).toEqual([responses.requestSchema]);
    expect(bodyOf('POST', '/v1beta/models/*')).toEqual([generateContent.requestSchema, generateContent.requestSchema, GenerateCountTokensBody]);
  });

  it('every JSON Schema agrees with its zod schema: what it accepts zod accepts (but for refinements), what it refuses zod refuses', () => {
    const { valid, invalid } = arbitraries();
    for (const { route, kind, zod, jsonSchema } of declared()) {
      const where = `${route.method} ${route.url} ${kind}`;
      const check = new Ajv2020({ strict: false }).compile(againstDocument(jsonSchema));
      fc.assert(
        fc.property(valid(jsonSchema), (value) => {
          expect(check(value), `${where}: the generator made a value its schema refuses`).toBe(true);
          const verdict = zodVerdict(zod, value);
          expect(verdict.ok || verdict.refinementOnly, `${where}: ${JSON.stringify(value)} -> ${verdict.ok ? '' : verdict.message}`).toBe(true);
        }),
        { numRuns: RUNS * 4 },
      );
      const wrong = invalid(jsonSchema);
      if (!wrong) continue;
      fc.assert(
        fc.property(wrong, (value) => {
          expect(check(value), `${where}: the generator made a value its schema accepts`).toBe(false);
          expect(zodVerdict(zod, value).ok, `${where}: zod accepts ${JSON.stringify(value)}`).toBe(false);
        }),
        { numRuns: RUNS * 4 },
      );
    }
  });

  /** A body made from the document's schema, valid or invalid, and the route's answer to it. */
  async function bodyProperty(method: 'POST' | 'PUT', path: string, url: string, send: (body: unknown) => Promise<{ statusCode: number; json(): any }>, accepted: (status: number, body: any) => boolean) {
    const op = doc.paths[path][method.toLowerCase()];
    const jsonSchema = op.requestBody.content['application/json'].schema;
    const zod = routeOf(method, path).docs[0]!.body!.json!;
    const errorSchema = documentAjv().compile(againstDocument(op.responses['400'].content['application/json'].schema));
    const { valid, invalid } = arbitraries();
    await fc.assert(
      fc.asyncProperty(fc.oneof(valid(jsonSchema), invalid(jsonSchema)!), async (body) => {
        const verdict = zodVerdict(zod, body);
        const response = await send(body);
        if (verdict.ok) {
          expect(accepted(response.statusCode, response.json()), `${method} ${url} ${JSON.stringify(body)} -> ${response.statusCode} ${JSON.stringify(response.json())}`).toBe(true);
          return;
        }
        expect(response.statusCode, `${method} ${url} ${JSON.stringify(body)}`).toBe(400);
        expect(errorSchema(response.json()), JSON.stringify(response.json())).toBe(true);
        expect(JSON.stringify(response.json())).toContain(JSON.stringify(verdict.message).slice(1, -1));
      }),
      { numRuns: RUNS },
    );
  }

  // The body as JSON text, `null` included (an object payload of null would send no body at all).
  const adminSend = (method: 'POST' | 'PUT', url: string) => (body: unknown) =>
    t.gateway.app.inject({
      method,
      url: `/admin/v1${url}`,
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  const clientSend = (url: string) => (body: unknown) =>
    t.gateway.app.inject({ method: 'POST', url, headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  it('POST /admin/v1/accounts: a body valid by the document opens an account, an invalid one gets the 400 of its schema', async () => {
    await bodyProperty('POST', '/admin/v1/accounts', '/accounts', adminSend('POST', '/accounts'), (status) => status === 201);
  });

  it('PUT /admin/v1/accounts/{id}/limits and POST .../topups: the same', async () => {
    const { accountId: scratch } = await t.accountWithKey();
    await bodyProperty('PUT', '/admin/v1/accounts/{id}/limits', `/accounts/${scratch}/limits`, adminSend('PUT', `/accounts/${scratch}/limits`), (status) => status === 200);
    // Refusals of the ledger, not of the schema (the document lists both): an amount under the
    // minimum top-up, and a reference used again for another amount.
    await bodyProperty('POST', '/admin/v1/accounts/{id}/topups', `/accounts/${scratch}/topups`, adminSend('POST', `/accounts/${scratch}/topups`), (status, body) =>
      status === 201 || status === 409 || (status === 400 && body.error.code === 'topup_below_minimum'),
    );
  });

  it('POST /v1/messages: a body valid by the document passes validation (an unknown model is what refuses it), an invalid one gets the 400 of its schema', async () => {
    const send = clientSend('/v1/messages');
    // Past validation the relay looks the model up: a made-up model is 400 model_not_found (`not_found_error`).
    await bodyProperty('POST', '/v1/messages', '/v1/messages', send, (status, body) => status !== 400 || body.error.type !== 'invalid_request_error');
  });

  it('POST /v1/chat/completions: the same in the chat shape', async () => {
    const send = clientSend('/v1/chat/completions');
    // Built-in tools need stream: true: a rule of the relay past the schema, said in the message.
    await bodyProperty('POST', '/v1/chat/completions', '/v1/chat/completions', send, (status, body) =>
      status !== 400 || body.error.code !== 'invalid_request' || /requires stream: true/.test(body.error.message),
    );
  });

  it('GET /api/v1/usage and GET /admin/v1/accounts/{id}/logs: a query valid by the document is answered, an invalid one gets the 400 of its schema', async () => {
    for (const [path, url, headers] of [
      ['/api/v1/usage', '/api/v1/usage', { 'x-api-key': key }],
      ['/admin/v1/accounts/{id}/logs', `/admin/v1/accounts/${accountId}/logs`, { authorization: 'Bearer test-admin-token' }],
    ] as const) {
      const op = doc.paths[path].get;
      const params = (op.parameters as Json[]).filter((p) => p.in === 'query');
      const zod = routeOf('GET', path).docs[0]!.query!;
      const errorSchema = documentAjv().compile(againstDocument(op.responses['400'].content['application/json'].schema));
      const { valid, invalidText } = arbitraries();
      const sendable = (v: unknown) => typeof v === 'string' || (Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === 'string'));
      const validQuery = fc.record(Object.fromEntries(params.map((p) => [p.name as string, valid(p.schema).filter(sendable)])), {
        requiredKeys: params.filter((p) => p.required).map((p) => p.name as string),
      });
      const invalidQuery = fc.oneof(
        ...params.flatMap((p) => {
          const wrong = invalidText(p.schema);
          return wrong ? [fc.tuple(validQuery, wrong).map(([q, bad]) => ({ ...q, [p.name]: bad }))] : [];
        }),
      );
      await fc.assert(
        fc.asyncProperty(fc.oneof(validQuery, invalidQuery), async (query) => {
          const search = new URLSearchParams();
          for (const [name, value] of Object.entries(query)) for (const v of [value].flat()) search.append(name, v as string);
          const response = await t.gateway.app.inject({ method: 'GET', url: `${url}?${search}`, headers });
          const verdict = zodVerdict(zod, query);
          if (verdict.ok) {
            expect(response.statusCode, `${url}?${search} ${response.body}`).toBe(200);
          } else {
            expect(response.statusCode, `${url}?${search}`).toBe(400);
            expect(errorSchema(response.json()), response.body).toBe(true);
            expect(response.json().error.message).toBe(verdict.message);
          }
        }),
        { numRuns: RUNS },
      );
    }
  });

  it('refusals the document names come in its error schemas', async () => {
    const cases: [string, string, Promise<{ statusCode: number; json(): any }>][] = [
      ['/v1/messages', 'post', t.gateway.app.inject({ method: 'POST', url: '/v1/messages', payload: {} })],
      ['/v1beta/models/{model}:generateContent', 'post', t.gateway.app.inject({ method: 'POST', url: '/v1beta/models/m:generateContent', headers: { 'x-api-key': key }, payload: {} })],
      ['/admin/v1/accounts', 'post', t.gateway.app.inject({ method: 'POST', url: '/admin/v1/accounts', payload: {} })],
      ['/mcp', 'post', t.gateway.app.inject({ method: 'POST', url: '/mcp', headers: { 'x-api-key': key, accept: 'application/json, text/event-stream' }, payload: { method: 'tools/list' } })],
      ['/api/v1/ext/wiki/search', 'get', t.gateway.app.inject({ method: 'GET', url: '/api/v1/ext/wiki/search?q=x&limit=-1', headers: { 'x-api-key': key } })],
    ];
    for (const [path, method, pending] of cases) {
      const response = await pending;
      const answer = doc.paths[path][method].responses[String(response.statusCode)];
      expect(answer, `${path} ${response.statusCode}`).toBeDefined();
      const check = documentAjv().compile(againstDocument(answer.content['application/json'].schema));
      expect(check(response.json()), `${path} ${JSON.stringify(response.json())}`).toBe(true);
    }
  });
});

describe('what the properties found', () => {
  it('a log cursor that is not a UUID is a 400, not the database’s 500', async () => {
    const response = await t.admin('GET', `/accounts/${accountId}/logs?cursor=0:a--00-a---0--0-aaaa--0-aaa-a--00a-0a`);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().error).toEqual({ code: 'invalid_request', message: 'cursor: is not a cursor this API returned' });
    const page = await t.admin('GET', `/accounts/${accountId}/logs?cursor=1700000000:00000000-0000-0000-0000-000000000000`);
    expect(page.statusCode, page.body).toBe(200);
  });

  it('an amount that is no decimal is a 400, not a 500 from its upper bound’s check', async () => {
    for (const [path, body] of [
      [`/accounts/${accountId}/topups`, { amount_usd: '', reference: 'r-empty' }],
      [`/accounts/${accountId}/topups`, { amount_usd: '1e3', reference: 'r-exponent' }],
      [`/accounts/${accountId}/keys`, { name: 'k', spend_cap_usd: 'ten' }],
    ] as const) {
      const response = await t.admin('POST', path, body);
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json().error.code).toBe('invalid_request');
      expect(response.json().error.message).toMatch(/_usd: a decimal string with at most 9 fractional digits/);
    }
  });

  it('a rate limit the accounts table cannot hold is refused by the schema the document shows', async () => {
    const limit = doc.paths['/admin/v1/accounts/{id}/limits'].put.requestBody.content['application/json'].schema.properties.rpm;
    expect(limit.anyOf[0]).toMatchObject({ type: 'integer', exclusiveMinimum: 0, maximum: 2_147_483_647 });
    const response = await t.admin('PUT', `/accounts/${accountId}/limits`, { rpm: 2 ** 31, concurrency: null });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toEqual({ code: 'invalid_request', message: 'rpm: Too big: expected number to be <=2147483647' });
  });
});
