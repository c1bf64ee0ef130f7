import { z } from 'zod';
import { MAX_KEY_LENGTH } from '../../idempotency/key';
import type { ErrorShape } from '../../upstream/contract';
import { BODY_RULES, bodyClassOf } from '../intake/body-classes';
import { REPLAYED_HEADER } from '../plugins/idempotency';
import { ANSWER_SCHEMAS, OPERATION_ANSWERS } from './answers';
import { ERROR_SCHEMAS, SHAPE_SCHEMA, type ErrorSchemaName } from './error-shapes';
import { TAGS, type ResponseDoc, type RouteDoc } from './route-doc';

/** JSON Schema 2020-12, OpenAPI 3.1's own dialect for Schema Objects. */
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
export const OPENAPI_VERSION = '3.1.1';

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  readonly openapi: string;
  readonly info: { readonly title: string; readonly version: string; readonly description: string };
  readonly jsonSchemaDialect: string;
  readonly servers: readonly Json[];
  readonly tags: readonly { readonly name: string; readonly description: string }[];
  readonly paths: Readonly<Record<string, Readonly<Record<string, Json>>>>;
  readonly components: { readonly schemas: Readonly<Record<string, Json>>; readonly securitySchemes: Readonly<Record<string, Json>> };
}

/** The settings of a route the document reads (its `config`): authentication, errors, limits. */
export interface RouteSettings {
  readonly auth?: 'none' | 'key';
  readonly free?: boolean;
  readonly headerKeyOnly?: boolean;
  readonly shape?: ErrorShape;
  readonly rateLimited?: boolean;
  readonly idempotent?: boolean;
  readonly trace?: boolean;
  readonly callLog?: unknown;
}

/** A route fastify registered, with its description (none: `docs` is empty). */
export interface DescribedRoute {
  readonly method: string;
  readonly url: string;
  readonly settings: RouteSettings;
  readonly docs: readonly RouteDoc[];
}

/** The API-key schemes in the spec's lookup order (first present wins); `GET /v1/models` takes only the header and Bearer. */
export const API_KEY_SCHEMES = ['apiKeyHeader', 'vendorApiKeyHeader', 'googApiKeyHeader', 'apiKeyQuery', 'bearerApiKey'] as const;
const HEADER_KEY_SCHEMES = ['apiKeyHeader', 'bearerApiKey'] as const;

const SECURITY_SCHEMES: Record<string, Json> = {
  apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'The API key (looked up first).' },
  vendorApiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-vendor-api-key', description: 'The API key, second in the lookup order (the generate-content SDK header).' },
  googApiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-goog-api-key', description: 'The API key, as the Google SDK sends it (same place in the lookup order as x-vendor-api-key).' },
  apiKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'The API key as a query parameter, third in the lookup order; discouraged (the key lands in logs).' },
  bearerApiKey: { type: 'http', scheme: 'bearer', description: 'The API key as `Authorization: Bearer <API_KEY>`, last in the lookup order.' },
  adminToken: { type: 'http', scheme: 'bearer', description: "The operator's `ADMIN_TOKEN` as `Authorization: Bearer <ADMIN_TOKEN>`." },
  metricsToken: { type: 'http', scheme: 'bearer', description: '`METRICS_TOKEN` as `Authorization: Bearer <METRICS_TOKEN>`, when the operator set one.' },
};

/** A request schema as JSON Schema: what a client may send (zod's input side, before defaults and transforms). */
export function requestSchema(schema: z.ZodType): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as Json;
  return rest;
}

/** An answer's schema: what the gateway sends (zod's output side). */
function responseSchema(schema: z.ZodType): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output' }) as Json;
  return rest;
}

const errorRef = (name: ErrorSchemaName) => ({ $ref: `#/components/schemas/${name}` });

/** A JSON answer's schema: the route's own, else its named component (answers/), else any object. */
function jsonAnswer(doc: RouteDoc, status: string, answer: ResponseDoc): Json {
  if (answer.schema) return responseSchema(answer.schema);
  const name = OPERATION_ANSWERS[doc.operationId]?.[Number(status)];
  return name ? { $ref: `#/components/schemas/${name}` } : { type: 'object' };
}

/** A fastify URL as an OpenAPI path: `:id` is `{id}`; a wildcard needs the route's own `path`. */
export function openApiPath(url: string, doc: RouteDoc): string {
  if (doc.path !== undefined) return doc.path;
  if (url.includes('*')) throw new Error(`${url}: a wildcard route describes its path (RouteDoc.path)`);
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const isAdmin = (url: string) => url.startsWith('/admin/');
/** Billable POSTs (`config.idempotent`) and every admin POST (admin/idempotency.ts). */
const takesIdempotencyKey = (route: DescribedRoute) => route.settings.idempotent === true || (isAdmin(route.url) && route.method === 'POST');
/** The routes the account's rate limits apply to (plugins/rate-limit.ts). */
const isRateLimited = (route: DescribedRoute) =>
  route.settings.auth === 'key' && route.settings.rateLimited !== false && (route.url.startsWith('/v1/') || route.url.startsWith('/v1beta/'));

function security(route: DescribedRoute, doc: RouteDoc): readonly Json[] {
  if (doc.security) return doc.security;
  if (isAdmin(route.url)) return [{ adminToken: [] }];
  if (route.settings.auth !== 'key') return [];
  return (route.settings.headerKeyOnly ? HEADER_KEY_SCHEMES : API_KEY_SCHEMES).map((name) => ({ [name]: [] }));
}

function errorSchemaOf(route: DescribedRoute, doc: RouteDoc): ErrorSchemaName {
  if (doc.errorSchema) return doc.errorSchema;
  if (isAdmin(route.url)) return 'AdminError';
  if (route.url === '/mcp') return 'JsonRpcError';
  return SHAPE_SCHEMA[route.settings.shape ?? 'chat'];
}

function parameters(route: DescribedRoute, doc: RouteDoc, path: string): Json[] {
  const list: Json[] = [];
  for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
    const schema = doc.params?.[name!] ? requestSchema(doc.params[name!]!) : { type: 'string' };
    list.push({ name, in: 'path', required: true, ...described(schema), schema });
  }
  if (doc.query) {
    const query = requestSchema(doc.query) as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {}))
      list.push({ name, in: 'query', required: (query.required ?? []).includes(name), ...described(schema), schema });
  }
  for (const [name, schema] of Object.entries(doc.headers ?? {})) {
    const json = requestSchema(schema);
    list.push({ name, in: 'header', required: !schema.safeParse(undefined).success, ...described(json), schema: json });
  }
  if (takesIdempotencyKey(route))
    list.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: `Makes the POST safe to retry: the same key with the same body replays the first answer (\`${REPLAYED_HEADER}: true\`); with another body it is refused (409).`,
      schema: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH, pattern: '^[\\x21-\\x7e]+$' },
    });
  return list;
}

const described = (schema: Json) => (typeof schema.description === 'string' ? { description: schema.description } : {});

/** The intake's rules for the route's body (intake/body-classes.ts): its size, and NUL characters. */
function bodyRules(route: DescribedRoute): string {
  const rule = BODY_RULES[bodyClassOf(route.method, route.url)];
  const size = rule.limit % MiB === 0 ? `${rule.limit / MiB} MB` : `${rule.limit} bytes`;
  return `At most ${size}.${rule.refuseNul ? ' No NUL (U+0000) anywhere in it.' : ''}`;
}
const MiB = 1024 * 1024;

function requestBody(route: DescribedRoute, doc: RouteDoc): Json | undefined {
  const body = doc.body;
  if (!body) return undefined;
  const content: Record<string, Json> = {};
  if (body.json) content['application/json'] = { schema: requestSchema(body.json) };
  if (body.multipart) {
    const fields = requestSchema(body.multipart.fields) as { properties?: Record<string, Json>; required?: string[] };
    const files = Object.fromEntries(
      Object.entries(body.multipart.files).map(([name, description]) => [name, { type: 'string', contentMediaType: 'application/octet-stream', description }]),
    );
    content['multipart/form-data'] = { schema: { ...fields, properties: { ...fields.properties, ...files } } };
  }
  if (body.raw !== undefined) content['*/*'] = { schema: { description: body.raw } };
  return { description: bodyRules(route), required: body.required ?? true, content };
}

const JSON_TYPES = new Set(['application/json']);

function successResponses(route: DescribedRoute, doc: RouteDoc): Record<string, Json> {
  const responses: Record<string, Json> = {};
  const trace = route.settings.trace || route.settings.callLog !== undefined;
  for (const [status, answer] of Object.entries(doc.responses)) {
    const types = answer.mediaTypes ?? ['application/json'];
    const content = Object.fromEntries(
      types.map((type) => [
        type,
        // Other media types are bytes or text as they are (audio, files, CSV, server-sent events).
        { schema: JSON_TYPES.has(type) ? jsonAnswer(doc, status, answer) : { type: 'string', contentMediaType: type } },
      ]),
    );
    responses[status] = {
      description: answer.description,
      ...(types.length > 0 ? { content } : {}),
      ...(trace ? { headers: { 'x-gateway-trace': { description: 'The request id (search the call log with it).', schema: { type: 'string' } } } } : {}),
    };
  }
  return responses;
}

function errorResponses(route: DescribedRoute, doc: RouteDoc): Record<string, Json> {
  const shape = errorSchemaOf(route, doc);
  const key = route.settings.auth === 'key';
  const errors: Record<number, [string, ErrorSchemaName]> = {};
  if (doc.body || doc.query) errors[400] = ['The request is invalid (the body or a query parameter): `invalid_request`.', shape];
  if (key) errors[401] = ['No API key, or one that cannot be used (unknown, revoked, expired, inactive account): `invalid_api_key`.', shape === 'JsonRpcError' ? 'ChatError' : shape];
  if (isAdmin(route.url)) errors[401] = ['No admin token, or a wrong one: `unauthorized`.', shape];
  if (key && !route.settings.free) errors[402] = ['The balance is exhausted (0 or below), or the key is at its spend cap: `quota_exceeded`.', shape];
  if (takesIdempotencyKey(route)) errors[409] = ['`Idempotency-Key` reused with another body, or its first request is still running.', shape];
  if (doc.body) errors[413] = ["The body is over this endpoint's limit: `request_too_large`.", shape];
  if (isRateLimited(route)) errors[429] = ["Over the account's requests per minute or concurrency: `rate_limit_exceeded`, with `Retry-After`.", shape];
  for (const [status, description] of Object.entries(doc.errors ?? {})) {
    const automatic = errors[Number(status)];
    errors[Number(status)] = [automatic ? `${description} ${automatic[0]}` : description, automatic?.[1] ?? shape];
  }
  const responses: Record<string, Json> = {};
  for (const [status, [description, schema]] of Object.entries(errors))
    responses[status] = { description, content: { 'application/json': { schema: errorRef(schema) } } };
  responses.default = { description: 'Any other error, in this endpoint’s error shape.', content: { 'application/json': { schema: errorRef(shape) } } };
  return responses;
}

function operation(route: DescribedRoute, doc: RouteDoc, path: string): Json {
  const params = parameters(route, doc, path);
  const body = requestBody(route, doc);
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [...doc.tags],
    security: security(route, doc),
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(body ? { requestBody: body } : {}),
    responses: { ...successResponses(route, doc), ...errorResponses(route, doc) },
  };
}

const DESCRIPTION = [
  'An event-sourced prepaid-wallet gateway in front of LLM providers: one API key, one USD wallet, many upstream providers.',
  'Request schemas are generated from the zod schemas each route validates with; answers from the zod schemas of `src/http/openapi/answers/`, which the tests check real answers against.',
  'API keys are looked up in this order, the first present wins: `x-api-key`, `x-vendor-api-key` / `x-goog-api-key`, `?key=`, `Authorization: Bearer`.',
  "The operator's API under `/admin/v1` takes `Authorization: Bearer <ADMIN_TOKEN>`.",
].join('\n\n');

/** The OpenAPI 3.1 document of the described routes, in the order they were registered. */
export function openApiDocument(routes: readonly DescribedRoute[], version: string): OpenApiDocument {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    for (const doc of route.docs) {
      const path = openApiPath(route.url, doc);
      const method = route.method.toLowerCase();
      const item = (paths[path] ??= {});
      if (item[method]) throw new Error(`${route.method} ${path} is described twice`);
      item[method] = operation(route, doc, path);
    }
  }
  return {
    openapi: OPENAPI_VERSION,
    info: { title: 'Model gateway API', version, description: DESCRIPTION },
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    servers: [{ url: '/' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries({ ...ERROR_SCHEMAS, ...ANSWER_SCHEMAS }).map(([name, schema]) => [name, responseSchema(schema)])),
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}
