import { z } from 'zod';

/**
 * The knowledge endpoints' answers: the read API under /api/v1/ext/wiki (the shapes of
 * src/projections/knowledge/queries.ts), the operator's knowledge-base writes, and MCP's JSON-RPC envelope.
 */

const PageSummary = z.object({
  id: z.string(),
  kb_id: z.string(),
  title: z.string(),
  summary: z.string(),
  tags: z.array(z.string()),
  confidence: z.string().nullable(),
  needs_review: z.boolean(),
});

const PageSource = z.object({ r2_key: z.string(), filename: z.string().nullable(), locator: z.string().nullable(), compiled_at: z.string().nullable(), model: z.string().nullable() });

const Page = PageSummary.extend({
  aliases: z.array(z.string()),
  links: z.array(z.string()),
  body: z.string(),
  source: PageSource.nullable(),
  outgoing_links: z.array(z.object({ id: z.string(), resolved: z.boolean(), title: z.string().nullable() })),
});
export const WikiPage = Page.meta({ description: 'A knowledge page, whole.' });

export const WikiSearch = z
  .object({
    query: z.string(),
    total_hits: z.number().int(),
    offset: z.number().int(),
    returned: z.number().int(),
    has_more: z.boolean(),
    results: z.array(PageSummary.extend({ snippet: z.string(), score: z.number() })),
  })
  .meta({ description: 'Search hits with snippets.' });

export const WikiKbs = z
  .object({ kbs: z.array(z.object({ kb_id: z.string(), title: z.string(), access: z.enum(['personal', 'owner', 'reader']), page_count: z.number().int() })) })
  .meta({ description: 'The knowledge bases this key can read.' });

export const WikiTags = z.object({ kb_id: z.string(), tags: z.array(z.object({ tag: z.string(), count: z.number().int() })) }).meta({ description: 'The tags of a knowledge base, with counts.' });
export const WikiTagPages = z.object({ kb_id: z.string(), tag: z.string(), pages: z.array(PageSummary) }).meta({ description: 'The pages carrying a tag.' });
export const WikiPages = z
  .object({ kb_id: z.string(), pages: z.array(Page.extend({ body_truncated: z.boolean() })), missing: z.array(z.string()) })
  .meta({ description: 'The pages found (bodies cut), and the ids not found.' });
export const WikiBacklinks = z.object({ kb_id: z.string(), id: z.string(), backlinks: z.array(PageSummary) }).meta({ description: 'The pages linking to a page.' });
export const WikiSource = z
  .object({ r2_key: z.string(), filename: z.string().nullable(), locator: z.string().nullable(), url: z.string(), url_ttl_secs: z.number().int() })
  .meta({ description: "A page's source file as a signed download link." });

export const KnowledgeBase = z
  .object({ kb_id: z.string(), owner_account_id: z.string(), title: z.string(), reader_account_ids: z.array(z.string()) })
  .meta({ description: 'A knowledge base and who may read it.' });
export const KnowledgePageWritten = z.object({ kb_id: z.string(), id: z.string(), created: z.boolean() }).meta({ description: 'The page was written (created or replaced).' });
export const KnowledgePageDeleted = z.object({ kb_id: z.string(), id: z.string(), deleted: z.literal(true) }).meta({ description: 'The page was deleted.' });
export const StoredObject = z.object({ r2_key: z.string(), size: z.number().int() }).meta({ description: 'The source file was stored.' });

const JsonRpcResponse = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]),
  result: z.looseObject({}).optional().describe("The method's result (`tools/list`: `{tools}`; `tools/call`: `{content, isError?}`)."),
  error: z.looseObject({ code: z.number().int(), message: z.string() }).optional(),
});
export const McpAnswer = z.union([JsonRpcResponse, z.array(JsonRpcResponse)]).meta({ description: 'The JSON-RPC response, or a batch of them.' });
