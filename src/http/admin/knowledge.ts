import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { compiledAtText, LAST_UNIX_SECOND } from '../../commands/knowledge/compiled-at';
import type { KnowledgeService } from '../../commands/knowledge/service';
import { InvalidObjectKeyError, type ObjectStore } from '../../objects/store';
import type { ProjectionRunner } from '../../projections/runner/runner';
import type { RouteDoc } from '../openapi/route-doc';
import { fromDomain, parse } from './admin-error';
import { operatorText } from './operator-text';

export interface KnowledgeAdminOptions {
  readonly knowledge: KnowledgeService;
  readonly objects: ObjectStore;
  readonly runner: ProjectionRunner;
}

const Text = z.string().max(100_000);
const CreateKb = z
  .object({ kb_id: z.string().min(1).max(64), title: operatorText(200), reader_account_ids: z.array(z.string().min(1).max(100)).max(1000).optional() })
  .strict();
const ChangeKb = z.object({ title: operatorText(200).optional(), reader_account_ids: z.array(z.string().min(1).max(100)).max(1000).optional() }).strict();
export const PageBody = z
  .object({
    title: operatorText(500),
    summary: Text.default(''),
    tags: z.array(operatorText(100)).max(100).default([]),
    aliases: z.array(operatorText(200)).max(100).default([]),
    links: z.array(operatorText(200)).max(1000).default([]),
    body: z.string().max(2_000_000).default(''),
    confidence: z.string().max(50).nullable().default(null),
    needs_review: z.boolean().default(false),
    source: z
      .object({
        r2_key: z.string().min(1).max(512),
        filename: z.string().max(500).nullable().default(null),
        locator: z.string().max(500).nullable().default(null),
        // Unix seconds, or RFC 3339 text (imported front matter); stored as text (compiled-at.ts).
        compiled_at: z
          .union([z.number().int().min(0).max(LAST_UNIX_SECOND), z.string().max(100)])
          .nullable()
          .transform((value) => (value === null ? null : compiledAtText(value)))
          .default(null),
        model: z.string().max(200).nullable().default(null),
      })
      .strict()
      .nullable()
      .default(null),
  })
  .strict();

const KB = 'The knowledge base: `{kb_id, owner_account_id, title, reader_account_ids}`.';
const kbDoc = (operationId: string, summary: string, responses: RouteDoc['responses'], extra: Partial<RouteDoc>): RouteDoc => ({
  operationId,
  summary,
  tags: ['admin-knowledge'],
  responses,
  ...extra,
});

const DOCS = {
  createKb: kbDoc('createKnowledgeBase', 'Create a knowledge base owned by an account', { 201: { description: KB } }, {
    body: { json: CreateKb },
    errors: { 409: 'The account already has a knowledge base with this id: `kb_exists`.' },
  }),
  changeKb: kbDoc('updateKnowledgeBase', "Change a knowledge base's title or readers", { 200: { description: KB } }, {
    body: { json: ChangeKb },
    errors: { 404: 'No such knowledge base: `kb_not_found`.' },
  }),
  putPage: kbDoc('putKnowledgePage', 'Create or replace a page', { 200: { description: '`{kb_id, id, created: false}`.' }, 201: { description: '`{kb_id, id, created: true}`.' } }, {
    body: { json: PageBody },
    errors: { 404: 'No such knowledge base: `kb_not_found`.' },
  }),
  deletePage: kbDoc('deleteKnowledgePage', 'Delete a page', { 200: { description: '`{kb_id, id, deleted: true}`.' } }, {
    errors: { 404: 'No such knowledge base or page: `kb_not_found`, `page_not_found`.' },
  }),
  putObject: kbDoc('putObject', "Store a page's source file (the raw body is the file)", { 201: { description: '`{r2_key, size}`.' } }, {
    path: '/admin/v1/objects/{key}',
    params: { key: z.string().describe('The object key (may contain `/`); a page names it as `source.r2_key`.') },
    body: { raw: 'The file, any content type (stored with it); up to 100 MB.', required: false },
    errors: { 400: 'The key is not a valid object key.' },
  }),
};

/** Knowledge bases, pages and source files under /admin/v1 (the admin token hook and
 * error handler come from the enclosing admin plugin). */
export function knowledgeAdminRoutes({ knowledge, objects, runner }: KnowledgeAdminOptions) {
  return async (app: FastifyInstance) => {
    app.post<{ Params: { account: string } }>('/accounts/:account/kbs', { config: { openapi: DOCS.createKb } }, async (request, reply) => {
      const body = parse(CreateKb, request.body);
      const result = await knowledge.createKb(request.params.account, body.kb_id, body.title, body.reader_account_ids ?? []);
      if (!result.ok) throw fromDomain(result.error);
      await runner.waitFor(result.position);
      const s = result.state;
      return reply.code(201).send({ kb_id: s.kbId, owner_account_id: s.ownerAccountId, title: s.title, reader_account_ids: s.readers });
    });

    app.patch<{ Params: { account: string; kb: string } }>('/accounts/:account/kbs/:kb', { config: { openapi: DOCS.changeKb } }, async (request) => {
      const body = parse(ChangeKb, request.body);
      const result = await knowledge.changeKb(request.params.account, request.params.kb, {
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.reader_account_ids !== undefined ? { readers: body.reader_account_ids } : {}),
      });
      if (!result.ok) throw fromDomain(result.error);
      await runner.waitFor(result.position);
      const s = result.state;
      return { kb_id: s.kbId, owner_account_id: s.ownerAccountId, title: s.title, reader_account_ids: s.readers };
    });

    app.put<{ Params: { account: string; kb: string; page: string } }>('/accounts/:account/kbs/:kb/pages/:page', { config: { openapi: DOCS.putPage } }, async (request, reply) => {
      const body = parse(PageBody, request.body);
      const result = await knowledge.upsertPage(request.params.account, request.params.kb, request.params.page, body);
      if (!result.ok) throw fromDomain(result.error);
      await runner.waitFor(result.position);
      return reply.code(result.created ? 201 : 200).send({ kb_id: request.params.kb, id: request.params.page, created: result.created });
    });

    app.delete<{ Params: { account: string; kb: string; page: string } }>('/accounts/:account/kbs/:kb/pages/:page', { config: { openapi: DOCS.deletePage } }, async (request) => {
      const result = await knowledge.deletePage(request.params.account, request.params.kb, request.params.page);
      if (!result.ok) throw fromDomain(result.error);
      await runner.waitFor(result.position);
      return { kb_id: request.params.kb, id: request.params.page, deleted: true };
    });

    // Source files: the raw request body is the file, whatever its content type.
    await app.register(async (files) => {
      files.removeAllContentTypeParsers();
      files.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 100 * 1024 * 1024 }, (_request, body, done) => done(null, body));
      files.put<{ Params: { '*': string } }>('/objects/*', { config: { openapi: DOCS.putObject } }, async (request, reply) => {
        const key = request.params['*'];
        const bytes = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        try {
          await objects.put(key, bytes, request.headers['content-type'] ?? 'application/octet-stream');
        } catch (error) {
          if (error instanceof InvalidObjectKeyError) return reply.code(400).send({ error: { code: 'invalid_request', message: error.message } });
          throw error;
        }
        return reply.code(201).send({ r2_key: key, size: bytes.length });
      });
    });
  };
}
