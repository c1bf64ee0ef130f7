import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ObjectStore } from '../../objects/store';
import { LOCAL_DOWNLOAD_PREFIX, LocalObjectStore } from '../../objects/store';
import type { KnowledgeQueries, PageView, ReadableKb } from '../../projections/knowledge/queries';
import { GatewayError } from '../errors';

export const SEARCH_LIMIT = { default: 20, max: 50 } as const;
export const BATCH_IDS_MAX = 25;
export const BATCH_BODY_CHARS = 4000;
export const SOURCE_URL_TTL_SECS = 3600;

const WIKI = { auth: 'key', free: true } as const;
const NOT_FOUND = 'knowledge base or page not found';

/** Cuts by characters (code points), never inside a surrogate pair. */
export function truncateBody<T extends { body: string }>(page: T, max: number): T & { body_truncated: boolean } {
  const chars = [...page.body];
  if (chars.length <= max) return { ...page, body_truncated: false };
  return { ...page, body: chars.slice(0, max).join(''), body_truncated: true };
}

/** A query parameter given once or repeated (`?ids=a&ids=b`), as one string. */
const joined = (value: unknown, separator: string): string =>
  Array.isArray(value) ? value.map(String).join(separator) : typeof value === 'string' ? value : '';

export function intParam(value: unknown, name: string, fallback: number, range: { min: number; max?: number }): number {
  if (value === undefined || value === '') return fallback;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n) || n < range.min) throw new GatewayError('invalid_request', `${name} must be an integer ≥ ${range.min}`);
  return range.max !== undefined ? Math.min(n, range.max) : n;
}

/** `PUBLIC_BASE_URL`, else the address the request arrived on: never the client's `Host` header,
 * which would make the gateway hand out links to wherever the client names. */
export function baseUrlOf(request: FastifyRequest, configured: string | undefined): string {
  if (configured) return configured.replace(/\/+$/, '');
  const socket = request.raw.socket as { localAddress?: string; localPort?: number } | undefined;
  const address = (socket?.localAddress || '127.0.0.1').replace(/^::ffff:/, '');
  const host = address.includes(':') ? `[${address}]` : address;
  return `${request.protocol}://${host}${socket?.localPort ? `:${socket.localPort}` : ''}`;
}

export interface SourceLink {
  r2_key: string;
  filename: string | null;
  locator: string | null;
  url: string;
  url_ttl_secs: number;
}

export async function sourceLink(objects: ObjectStore, page: PageView, baseUrl: string, now: number): Promise<SourceLink | null> {
  if (!page.source) return null;
  const { r2_key, filename, locator } = page.source;
  const url = await objects.signedUrl(r2_key, SOURCE_URL_TTL_SECS, { baseUrl, now, filename });
  return { r2_key, filename, locator, url, url_ttl_secs: SOURCE_URL_TTL_SECS };
}

export interface WikiOptions {
  readonly queries: KnowledgeQueries;
  readonly objects: ObjectStore;
  readonly publicBaseUrl: string | undefined;
  readonly now: () => number;
}

/** The 8 read-only knowledge endpoints under /api/v1/ext/wiki, plus the download route
 * that the local object store's signed links point at. */
export function wikiRoutes({ queries, objects, publicBaseUrl, now }: WikiOptions) {
  return async (app: FastifyInstance) => {
    async function kbOf(request: FastifyRequest): Promise<ReadableKb> {
      const kbId = (request.query as { kb_id?: string }).kb_id || 'default';
      const kb = await queries.readableKb(request.caller!.accountId, kbId);
      if (!kb) throw new GatewayError('not_found', NOT_FOUND);
      return kb;
    }

    app.get<{ Querystring: { q?: string | string[]; limit?: string; offset?: string } }>('/api/v1/ext/wiki/search', { config: WIKI }, async (request) => {
      const q = joined(request.query.q, ' ').trim();
      if (q === '') throw new GatewayError('invalid_request', 'q is required');
      const limit = intParam(request.query.limit, 'limit', SEARCH_LIMIT.default, { min: 1, max: SEARCH_LIMIT.max });
      const offset = intParam(request.query.offset, 'offset', 0, { min: 0 });
      const kb = await kbOf(request);
      const { total, hits } = await queries.search([kb], q, limit, offset);
      return { query: q, total_hits: total, offset, returned: hits.length, has_more: offset + hits.length < total, results: hits };
    });

    app.get('/api/v1/ext/wiki/kbs', { config: WIKI }, async (request) => {
      const kbs = await queries.readableKbs(request.caller!.accountId);
      const counts = await queries.pageCounts(kbs.map((k) => k.kbKey));
      return { kbs: kbs.map((k) => ({ kb_id: k.kbId, title: k.title, access: k.access, page_count: counts.get(k.kbKey) ?? 0 })) };
    });

    app.get('/api/v1/ext/wiki/tags', { config: WIKI }, async (request) => {
      const kb = await kbOf(request);
      return { kb_id: kb.kbId, tags: await queries.tags(kb) };
    });

    app.get<{ Params: { tag: string } }>('/api/v1/ext/wiki/tags/:tag', { config: WIKI }, async (request) => {
      const kb = await kbOf(request);
      const pages = await queries.pagesByTag([kb], request.params.tag);
      return { kb_id: kb.kbId, tag: request.params.tag, pages };
    });

    app.get<{ Querystring: { ids?: string | string[] } }>('/api/v1/ext/wiki/pages', { config: WIKI }, async (request) => {
      const ids = [...new Set(joined(request.query.ids, ',').split(',').map((s) => s.trim()).filter(Boolean))];
      if (ids.length === 0) throw new GatewayError('invalid_request', 'ids is required: a comma-separated list of page ids (at most 25)');
      const kb = await kbOf(request);
      const wanted = ids.slice(0, BATCH_IDS_MAX);
      const pages = await queries.pages(kb, wanted);
      const found = new Set(pages.map((p) => p.id));
      return {
        kb_id: kb.kbId,
        pages: pages.map((p) => truncateBody(p, BATCH_BODY_CHARS)),
        missing: wanted.filter((id) => !found.has(id)),
      };
    });

    app.get<{ Params: { id: string } }>('/api/v1/ext/wiki/pages/:id', { config: WIKI }, async (request) => {
      const page = await queries.page(await kbOf(request), request.params.id);
      if (!page) throw new GatewayError('not_found', NOT_FOUND);
      return page;
    });

    app.get<{ Params: { id: string } }>('/api/v1/ext/wiki/pages/:id/backlinks', { config: WIKI }, async (request) => {
      const kb = await kbOf(request);
      if (!(await queries.page(kb, request.params.id))) throw new GatewayError('not_found', NOT_FOUND);
      return { kb_id: kb.kbId, id: request.params.id, backlinks: await queries.backlinks(kb, request.params.id) };
    });

    app.get<{ Params: { id: string } }>('/api/v1/ext/wiki/pages/:id/source', { config: WIKI }, async (request) => {
      const page = await queries.page(await kbOf(request), request.params.id);
      if (!page) throw new GatewayError('not_found', NOT_FOUND);
      const link = await sourceLink(objects, page, baseUrlOf(request, publicBaseUrl), now());
      if (!link) throw new GatewayError('not_found', `page ${request.params.id} has no source file`);
      return link;
    });

    // The signature is the credential here: a link works for anyone holding it, for an hour.
    if (objects instanceof LocalObjectStore) {
      app.get<{ Params: { '*': string }; Querystring: { expires?: string; signature?: string } }>(
        `${LOCAL_DOWNLOAD_PREFIX}*`,
        { config: { auth: 'none' } },
        async (request, reply) => {
          const key = request.params['*'];
          const expires = Number(request.query.expires);
          if (!objects.verify(key, expires, request.query.signature ?? '', now()))
            throw new GatewayError('not_found', 'download link expired or invalid; ask for a new one');
          const object = await objects.get(key);
          if (!object) throw new GatewayError('not_found', 'source file not found');
          const name = key.split('/').pop()!;
          const ascii = name.replace(/[^\x20-\x7e]|"/g, '_');
          return reply
            .header('content-type', object.contentType)
            .header('content-disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`)
            .header('cache-control', 'private, max-age=0')
            // The stored content type is the uploader's word: a browser must not second-guess it
            // into HTML or script.
            .header('x-content-type-options', 'nosniff')
            .send(object.bytes);
        },
      );
    }
  };
}
