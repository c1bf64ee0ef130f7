import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ObjectStore } from '../../objects/store';
import { LOCAL_DOWNLOAD_PREFIX, LocalObjectStore } from '../../objects/store';
import type { KnowledgeQueries, PageView, ReadableKb } from '../../projections/knowledge/queries';
import { GatewayError } from '../errors';
import { countQuery } from '../intake/numbers';
import type { RouteDoc } from '../openapi/route-doc';

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

/** A query parameter given once or repeated (`?ids=a&ids=b`), as one string; required. */
const joined = (separator: string, required: string) =>
  z
    .union([z.string(), z.array(z.string())], { error: required })
    .transform((value) => (Array.isArray(value) ? value.join(separator) : value).trim())
    .refine((text) => text !== '', required);

const KbQuery = { kb_id: z.string().optional().describe('The knowledge base (default `default`: the account’s own).') };
const InKb = z.looseObject(KbQuery);

const SearchQuery = z.looseObject({
  q: joined(' ', 'is required: the search text').describe('The search text: "quoted phrases", OR and -exclusion (repeated: joined with spaces).'),
  limit: countQuery(1, SEARCH_LIMIT.max).describe(`Results per page (default ${SEARCH_LIMIT.default}; above ${SEARCH_LIMIT.max} is ${SEARCH_LIMIT.max}).`),
  offset: countQuery(0).describe('Results to skip (default 0).'),
  ...KbQuery,
});

const PagesQuery = z.looseObject({
  ids: joined(',', `is required: a comma-separated list of page ids (at most ${BATCH_IDS_MAX})`).describe(
    `Page ids, comma-separated or repeated; beyond ${BATCH_IDS_MAX} are dropped.`,
  ),
  ...KbQuery,
});

const wikiDoc = (operationId: string, summary: string, answer: string, query: z.ZodObject = InKb): RouteDoc => ({
  operationId,
  summary,
  tags: ['knowledge'],
  query,
  responses: { 200: { description: answer } },
  errors: { 404: 'The knowledge base or page is not readable with this key, or does not exist (not told apart): `not_found`.' },
});

const WIKI_DOCS = {
  search: wikiDoc('searchWiki', 'Full-text search in a knowledge base', '`{query, total_hits, offset, returned, has_more, results[]}`: light hits with snippets.', SearchQuery),
  kbs: {
    operationId: 'listWikiKbs',
    summary: 'The knowledge bases this key can read',
    tags: ['knowledge'],
    responses: { 200: { description: '`{kbs: [{kb_id, title, access, page_count}]}`.' } },
  } satisfies RouteDoc,
  tags: wikiDoc('listWikiTags', 'The tags of a knowledge base, with counts', '`{kb_id, tags: [{tag, count}]}`.'),
  tag: wikiDoc('listWikiPagesByTag', 'The pages carrying a tag', '`{kb_id, tag, pages[]}`.'),
  pages: wikiDoc('readWikiPages', `Up to ${BATCH_IDS_MAX} pages at once, bodies cut to ${BATCH_BODY_CHARS} characters`, '`{kb_id, pages[], missing[]}`.', PagesQuery),
  page: wikiDoc('readWikiPage', 'One page, whole', 'The page.'),
  backlinks: wikiDoc('listWikiBacklinks', 'The pages linking to a page', '`{kb_id, id, backlinks[]}`.'),
  source: wikiDoc('getWikiSource', "A page's source file as a download link (1 hour)", `\`{r2_key, filename, locator, url, url_ttl_secs: ${SOURCE_URL_TTL_SECS}}\`.`),
};

const DownloadQuery = z.looseObject({ expires: z.string().optional().describe('Unix seconds.'), signature: z.string().optional() });

const DOWNLOAD_DOC: RouteDoc = {
  operationId: 'downloadWikiSource',
  summary: 'A source file, by the signed link `getWikiSource` handed out',
  description: 'The signature is the credential: the link works for anyone holding it, until it expires. Served only with the local object store.',
  tags: ['knowledge'],
  path: `${LOCAL_DOWNLOAD_PREFIX}{key}`,
  params: { key: z.string().describe('The object key (may contain `/`).') },
  query: DownloadQuery,
  responses: { 200: { description: 'The file, with its stored content type.', mediaTypes: ['application/octet-stream'] } },
  errors: { 404: 'The link expired or is invalid, or the file is gone: `not_found`.' },
};

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

    app.get<{ Querystring: z.output<typeof SearchQuery> }>('/api/v1/ext/wiki/search', { config: { ...WIKI, openapi: WIKI_DOCS.search } }, async (request) => {
      const { q } = request.query;
      const limit = request.query.limit ?? SEARCH_LIMIT.default;
      const offset = request.query.offset ?? 0;
      const kb = await kbOf(request);
      const { total, hits } = await queries.search([kb], q, limit, offset);
      return { query: q, total_hits: total, offset, returned: hits.length, has_more: offset + hits.length < total, results: hits };
    });

    app.get('/api/v1/ext/wiki/kbs', { config: { ...WIKI, openapi: WIKI_DOCS.kbs } }, async (request) => {
      const kbs = await queries.readableKbs(request.caller!.accountId);
      const counts = await queries.pageCounts(kbs.map((k) => k.kbKey));
      return { kbs: kbs.map((k) => ({ kb_id: k.kbId, title: k.title, access: k.access, page_count: counts.get(k.kbKey) ?? 0 })) };
    });

    app.get('/api/v1/ext/wiki/tags', { config: { ...WIKI, openapi: WIKI_DOCS.tags } }, async (request) => {
      const kb = await kbOf(request);
      return { kb_id: kb.kbId, tags: await queries.tags(kb) };
    });

    app.get<{ Params: { tag: string } }>('/api/v1/ext/wiki/tags/:tag', { config: { ...WIKI, openapi: WIKI_DOCS.tag } }, async (request) => {
      const kb = await kbOf(request);
      const pages = await queries.pagesByTag([kb], request.params.tag);
      return { kb_id: kb.kbId, tag: request.params.tag, pages };
    });

    app.get<{ Querystring: z.output<typeof PagesQuery> }>('/api/v1/ext/wiki/pages', { config: { ...WIKI, openapi: WIKI_DOCS.pages } }, async (request) => {
      const ids = [...new Set(request.query.ids.split(',').map((s) => s.trim()).filter(Boolean))];
      if (ids.length === 0) throw new GatewayError('invalid_request', `ids: is required: a comma-separated list of page ids (at most ${BATCH_IDS_MAX})`);
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

    app.get<{ Params: { id: string } }>('/api/v1/ext/wiki/pages/:id', { config: { ...WIKI, openapi: WIKI_DOCS.page } }, async (request) => {
      const page = await queries.page(await kbOf(request), request.params.id);
      if (!page) throw new GatewayError('not_found', NOT_FOUND);
      return page;
    });

    app.get<{ Params: { id: string } }>('/api/v1/ext/wiki/pages/:id/backlinks', { config: { ...WIKI, openapi: WIKI_DOCS.backlinks } }, async (request) => {
      const kb = await kbOf(request);
      if (!(await queries.page(kb, request.params.id))) throw new GatewayError('not_found', NOT_FOUND);
      return { kb_id: kb.kbId, id: request.params.id, backlinks: await queries.backlinks(kb, request.params.id) };
    });

    app.get<{ Params: { id: string } }>('/api/v1/ext/wiki/pages/:id/source', { config: { ...WIKI, openapi: WIKI_DOCS.source } }, async (request) => {
      const page = await queries.page(await kbOf(request), request.params.id);
      if (!page) throw new GatewayError('not_found', NOT_FOUND);
      const link = await sourceLink(objects, page, baseUrlOf(request, publicBaseUrl), now());
      if (!link) throw new GatewayError('not_found', `page ${request.params.id} has no source file`);
      return link;
    });

    // The signature is the credential here: a link works for anyone holding it, for an hour.
    if (objects instanceof LocalObjectStore) {
      app.get<{ Params: { '*': string }; Querystring: z.output<typeof DownloadQuery> }>(
        `${LOCAL_DOWNLOAD_PREFIX}*`,
        { config: { auth: 'none', openapi: DOWNLOAD_DOC } },
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
