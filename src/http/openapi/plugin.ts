import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import type { z } from 'zod';
import { zodMessage } from '../../config/zod-message';
import { GatewayError } from '../errors';
import { addRouteHook } from '../plugins/route-hooks';
import { openApiDocument, type DescribedRoute, type OpenApiDocument, type RouteSettings } from './document';
import { OPENAPI_DOC, OPERATIONAL_DOCS } from './operational';
import { docsOf, type RouteDoc } from './route-doc';

/** A route fastify registered; `excluded` says why it is not in the document. */
export interface RegisteredRoute extends DescribedRoute {
  readonly excluded?: string;
}

export interface OpenApiRegistry {
  /** Every route registered after the plugin (which `buildApp` registers first), in order. */
  routes(): readonly RegisteredRoute[];
  /** The document of the routes registered so far (once the application is ready, built once and kept). */
  document(): OpenApiDocument;
}

declare module 'fastify' {
  interface FastifyInstance {
    readonly openApi: OpenApiRegistry;
  }
}

export interface OpenApiOptions {
  readonly version: string;
}

/** Fastify adds a HEAD route to every GET route: the same answer without its body, not described apart. */
export const AUTOMATIC_HEAD = 'the HEAD route fastify adds to a GET route';

/** One query schema per route, even when a wildcard route has several descriptions. */
function queryOf(docs: readonly RouteDoc[], url: string): z.ZodObject | undefined {
  const queries = new Set(docs.map((d) => d.query));
  if (queries.size > 1) throw new Error(`${url}: its descriptions declare different query schemas`);
  return docs[0]?.query;
}

/**
 * The OpenAPI description: every route registered after this plugin is recorded with its
 * `config.openapi` (operational routes from OPERATIONAL_DOCS), a route's declared query schema is
 * enforced here (the handler reads the parsed query), and `GET /openapi.json` serves the document.
 */
export const openApiPlugin = fp<OpenApiOptions>(
  async (app: FastifyInstance, { version }) => {
    const routes: RegisteredRoute[] = [];
    const gets = new Set<string>();

    app.addHook('onRoute', (route: RouteOptions) => {
      const settings = (route.config ?? {}) as RouteSettings;
      for (const method of [route.method].flat()) {
        const docs = docsOf(route.config?.openapi ?? OPERATIONAL_DOCS[`${method} ${route.url}`]);
        const automaticHead = method === 'HEAD' && gets.has(route.url);
        if (method === 'GET') gets.add(route.url);
        routes.push({ method, url: route.url, settings, docs, ...(automaticHead ? { excluded: AUTOMATIC_HEAD } : {}) });
      }
      const query = queryOf(docsOf(route.config?.openapi), route.url);
      if (query) addRouteHook(route, 'preValidation', enforceQuery(query));
    });

    // Built on its first request (tens of milliseconds, which a start need not pay), then kept: no
    // route can be added once the application is ready.
    let document: OpenApiDocument | undefined;
    const build = () => openApiDocument(routes.filter((r) => r.excluded === undefined), version);
    let ready = false;
    app.addHook('onReady', async () => {
      ready = true;
    });
    app.decorate('openApi', { routes: () => routes, document: () => (ready ? (document ??= build()) : build()) });

    app.get('/openapi.json', { config: { auth: 'none', rateLimited: false, openapi: OPENAPI_DOC } }, async () => app.openApi.document());
  },
  { name: 'openapi' },
);

/** A route's query as its schema reads it, or a 400 in the route's error shape. */
function enforceQuery(schema: z.ZodObject) {
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const parsed = schema.safeParse(request.query ?? {});
    if (!parsed.success) return done(new GatewayError('invalid_request', zodMessage(parsed.error)));
    request.query = parsed.data;
    done();
  };
}
