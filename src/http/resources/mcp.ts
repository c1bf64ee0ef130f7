import type { FastifyBaseLogger, FastifyInstance, FastifyReply } from 'fastify';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import type { ObjectStore } from '../../objects/store';
import type { KnowledgeQueries, ReadableKb } from '../../projections/knowledge/queries';
import { zodMessage } from '../../config/zod-message';
import { failureOf, GatewayError } from '../errors';
import { clientErrorOf, jsonRpcError } from '../intake/plugin';
import type { RouteDoc } from '../openapi/route-doc';
import { baseUrlOf, sourceLink, truncateBody } from './wiki';

export const MCP_LIMITS = { searchDefault: 10, searchMax: 50, pageBody: 8000, batchIds: 25, batchBody: 1200 } as const;

export interface McpOptions {
  readonly queries: KnowledgeQueries;
  readonly objects: ObjectStore;
  readonly publicBaseUrl: string | undefined;
  readonly now: () => number;
  readonly version: string;
}

const result = (value: unknown) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(value) }],
  structuredContent: value as Record<string, unknown>,
});
const failure = (message: string) => ({ content: [{ type: 'text' as const, text: message }], isError: true });

/** A tool's text argument: no text column can store a NUL character. */
const Text = z
  .string()
  .min(1)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL (U+0000) characters');

interface McpSdk {
  readonly McpServer: typeof McpServer;
  readonly StreamableHTTPServerTransport: typeof StreamableHTTPServerTransport;
}
let sdkLoaded: Promise<McpSdk> | undefined;
/** The MCP SDK is loaded on the first /mcp request, not at start: most calls never use it. */
const loadSdk = () =>
  (sdkLoaded ??= Promise.all([import('@modelcontextprotocol/sdk/server/mcp.js'), import('@modelcontextprotocol/sdk/server/streamableHttp.js')]).then(
    ([mcp, http]) => ({ McpServer: mcp.McpServer, StreamableHTTPServerTransport: http.StreamableHTTPServerTransport }),
  ));

/** One MCP server per request, bound to the caller's readable bases: the transport is
 * stateless (no session id) and answers in JSON, so any instance can take any request. */
function serverFor(sdk: McpSdk, kbs: readonly ReadableKb[], baseUrl: string, options: McpOptions, log: FastifyBaseLogger, requestId: string): McpServer {
  const { queries, objects, now } = options;
  const server = new sdk.McpServer({ name: 'model-gateway-knowledge', version: options.version });
  // A tool that throws would hand the client the error's own text (a database's message): the
  // client gets a plain failure instead, and the log gets the error.
  const guarded =
    <A extends unknown[], R>(tool: string, handler: (...args: A) => Promise<R>) =>
    async (...args: A) => {
      try {
        return await handler(...args);
      } catch (error) {
        log.error({ err: error, tool }, 'MCP tool failed');
        return failure(`${tool} failed on the gateway's side; the request id is ${requestId}`);
      }
    };
  const notFound = (id: string) => failure(`page ${id} not found in the knowledge readable with this key`);

  server.registerTool(
    'search_wiki',
    {
      description: 'Full-text search over every knowledge base this key can read (personal and shared). Returns light hits with snippets, no bodies.',
      inputSchema: {
        q: Text.describe('search text; supports "quoted phrases", OR and -exclusion'),
        limit: z.number().int().min(1).optional().describe(`results per page, default ${MCP_LIMITS.searchDefault}, at most ${MCP_LIMITS.searchMax}`),
        offset: z.number().int().min(0).optional().describe('results to skip, default 0'),
      },
    },
    guarded('search_wiki', async ({ q, limit, offset }) => {
      const size = Math.min(limit ?? MCP_LIMITS.searchDefault, MCP_LIMITS.searchMax);
      const start = offset ?? 0;
      const { total, hits } = await queries.search(kbs, q, size, start);
      return result({ query: q, total_hits: total, offset: start, returned: hits.length, has_more: start + hits.length < total, results: hits });
    }),
  );

  server.registerTool(
    'read_page',
    { description: `Reads one page by id: all fields, body up to ${MCP_LIMITS.pageBody} characters.`, inputSchema: { id: Text } },
    guarded('read_page', async ({ id }) => {
      const found = await queries.findPage(kbs, id);
      return found ? result(truncateBody(found.page, MCP_LIMITS.pageBody)) : notFound(id);
    }),
  );

  server.registerTool(
    'read_pages',
    {
      description: `Reads up to ${MCP_LIMITS.batchIds} pages at once, each body cut to a ${MCP_LIMITS.batchBody}-character excerpt.`,
      inputSchema: { ids: z.array(Text).min(1).describe(`page ids; beyond ${MCP_LIMITS.batchIds} are dropped`) },
    },
    guarded('read_pages', async ({ ids }) => {
      const wanted = [...new Set(ids)].slice(0, MCP_LIMITS.batchIds);
      const pages = [];
      const missing = [];
      for (const id of wanted) {
        const found = await queries.findPage(kbs, id);
        if (found) pages.push(truncateBody(found.page, MCP_LIMITS.batchBody));
        else missing.push(id);
      }
      return result({ pages, missing });
    }),
  );

  server.registerTool(
    'list_by_tag',
    { description: 'Pages carrying a tag, across every readable knowledge base.', inputSchema: { tag: Text } },
    guarded('list_by_tag', async ({ tag }) => result({ tag, pages: await queries.pagesByTag(kbs, tag) })),
  );

  server.registerTool(
    'backlinks',
    { description: 'Pages that link to the given page.', inputSchema: { id: Text } },
    guarded('backlinks', async ({ id }) => {
      const found = await queries.findPage(kbs, id);
      return found ? result({ id, kb_id: found.kb.kbId, backlinks: await queries.backlinks(found.kb, id) }) : notFound(id);
    }),
  );

  server.registerTool(
    'get_source',
    { description: 'The source file a page was compiled from, as a download link that expires in 1 hour.', inputSchema: { id: Text } },
    guarded('get_source', async ({ id }) => {
      const found = await queries.findPage(kbs, id);
      if (!found) return notFound(id);
      const link = await sourceLink(objects, found.page, baseUrl, now());
      return link ? result(link) : failure(`page ${id} has no source file`);
    }),
  );

  return server;
}

/**
 * What the MCP SDK's transport takes: a JSON-RPC 2.0 message or a batch of them (it validates each
 * against the protocol's own schemas); the tools and their arguments are listed by `tools/list`.
 */
const JsonRpcMessage = z.looseObject({
  jsonrpc: z.literal('2.0'),
  method: z.string().optional().describe('`initialize`, `tools/list`, `tools/call`, ... (absent in a response).'),
  id: z.union([z.string(), z.number()]).optional().describe('Absent in a notification.'),
  params: z.looseObject({}).optional(),
});
const McpBody = z.union([JsonRpcMessage, z.array(JsonRpcMessage).min(1)]);

const MCP_DOC: RouteDoc = {
  operationId: 'mcp',
  summary: 'MCP server (streamable HTTP, stateless, JSON responses): knowledge tools',
  description:
    'Tools: search_wiki, read_page, read_pages, list_by_tag, backlinks, get_source, over every knowledge base the key can read. Send `Accept: application/json, text/event-stream`.',
  tags: ['knowledge'],
  body: { json: McpBody },
  responses: {
    200: { description: 'The JSON-RPC response (or batch of responses).' },
    202: { description: 'Accepted: the body held only notifications or responses.', mediaTypes: [] },
  },
  errors: { 406: 'The Accept header does not include application/json and text/event-stream.' },
};

const refusedDoc = (method: 'get' | 'delete'): RouteDoc => ({
  operationId: `mcp${method === 'get' ? 'Get' : 'Delete'}`,
  summary: `Not allowed: this MCP server is stateless (no ${method === 'get' ? 'server-initiated stream' : 'session to end'})`,
  tags: ['knowledge'],
  security: [],
  responses: {},
  errors: { 405: 'Always: `Allow: POST`.' },
});

function methodNotAllowed(reply: FastifyReply) {
  return reply
    .code(405)
    .header('allow', 'POST')
    .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP server is stateless; send JSON-RPC with POST' }, id: null });
}

/** MCP over streamable HTTP at /mcp, authenticated by the API key like every endpoint. */
export function mcpRoutes(options: McpOptions) {
  return async (app: FastifyInstance) => {
    // The endpoint's errors, the body's included (too large, not JSON), in JSON-RPC's shape.
    app.setErrorHandler((error, request, reply) => {
      const refusal = clientErrorOf(error, request);
      if (!refusal) request.log.error({ err: error }, 'MCP request failed');
      const answer = refusal ?? failureOf(error, request.id);
      for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
      return reply.code(answer.status).type('application/json').send(jsonRpcError(answer));
    });
    app.post('/mcp', { config: { auth: 'key', free: true, openapi: MCP_DOC } }, async (request, reply) => {
      // The SDK checks each message against MCP's own schemas; this is the envelope /openapi.json describes.
      const envelope = McpBody.safeParse(request.body);
      if (!envelope.success) throw new GatewayError('invalid_request', `not a JSON-RPC 2.0 message: ${zodMessage(envelope.error)}`);
      const kbs = await options.queries.readableKbs(request.caller!.accountId);
      const sdk = await loadSdk();
      const server = serverFor(sdk, kbs, baseUrlOf(request, options.publicBaseUrl), options, request.log, request.id);
      const transport = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    });
    // Answered before any body is read: these methods take none, whatever the client sends.
    const refuse = (method: 'get' | 'delete') => ({
      config: { auth: 'none' as const, openapi: refusedDoc(method) },
      onRequest: async (_request: unknown, reply: FastifyReply) => methodNotAllowed(reply),
    });
    app.get('/mcp', refuse('get'), async (_request, reply) => methodNotAllowed(reply));
    app.delete('/mcp', refuse('delete'), async (_request, reply) => methodNotAllowed(reply));
  };
}
