import { z } from 'zod';
import { Timestamp, defineEvent, type EventOf } from './codec';

/** A knowledge base: `kb-{kbKey}`. A team base's key is its kb_id (globally unique); an
 * account's personal base `default` is keyed `default.{accountId}` and needs no stream. */
export const kbStream = (kbKey: string) => `kb-${kbKey}`;
/** One page: `kbpage-{kbKey}/{pageId}`. */
export const pageStream = (kbKey: string, pageId: string) => `kbpage-${kbKey}/${pageId}`;
export const personalKbKey = (accountId: string) => `default.${accountId}`;

export const PageSource = z.object({
  r2_key: z.string(),
  filename: z.string().nullable(),
  locator: z.string().nullable(),
  compiled_at: z.string().nullable(),
  model: z.string().nullable(),
});

export const PageContent = z.object({
  title: z.string(),
  summary: z.string(),
  tags: z.array(z.string()),
  aliases: z.array(z.string()),
  links: z.array(z.string()),
  body: z.string(),
  confidence: z.string().nullable(),
  needs_review: z.boolean(),
  source: PageSource.nullable(),
});
export type PageContent = z.output<typeof PageContent>;

export const KnowledgeBaseCreated = defineEvent(
  'KnowledgeBaseCreated',
  z.object({
    kb_id: z.string(),
    owner_account_id: z.string(),
    title: z.string(),
    reader_account_ids: z.array(z.string()),
    at: Timestamp,
  }),
);
export const KnowledgeBaseChanged = defineEvent(
  'KnowledgeBaseChanged',
  z.object({ title: z.string().optional(), reader_account_ids: z.array(z.string()).optional(), at: Timestamp }),
);
export const PageUpserted = defineEvent(
  'PageUpserted',
  PageContent.extend({ kb_key: z.string(), kb_id: z.string(), owner_account_id: z.string(), page_id: z.string(), at: Timestamp }),
);
export const PageDeleted = defineEvent('PageDeleted', z.object({ at: Timestamp }));

export const knowledgeEvents = [KnowledgeBaseCreated, KnowledgeBaseChanged, PageUpserted, PageDeleted] as const;
export type KnowledgeEvent = EventOf<(typeof knowledgeEvents)[number]>;
