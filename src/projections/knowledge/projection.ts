import { oneAtATime, type Projection } from '../projection';

/** `[[page-id]]` and `[[page-id|label]]` in a body link to a page of the same base. */
export function linkedIds(links: readonly string[], body: string): string[] {
  const found = [...links];
  for (const match of body.matchAll(/\[\[([^\]|#\n]+)(?:[|#][^\]\n]*)?\]\]/g)) found.push(match[1]!.trim());
  return [...new Set(found.filter((id) => id !== ''))];
}

/** Knowledge bases, their readers, pages with a weighted full-text vector, and links. */
export const knowledgeProjection: Projection = {
  name: 'knowledge',
  streams: ['kb-', 'kbpage-'],
  tables: ['kb_links', 'kb_pages', 'kb_readers', 'knowledge_bases'],
  schema: `
CREATE TABLE IF NOT EXISTS knowledge_bases (
  kb_key text PRIMARY KEY,
  kb_id text NOT NULL,
  owner_account_id text NOT NULL,
  title text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS knowledge_bases_by_owner ON knowledge_bases (owner_account_id);
CREATE TABLE IF NOT EXISTS kb_readers (
  kb_key text NOT NULL,
  account_id text NOT NULL,
  PRIMARY KEY (kb_key, account_id)
);
CREATE INDEX IF NOT EXISTS kb_readers_by_account ON kb_readers (account_id);
CREATE TABLE IF NOT EXISTS kb_pages (
  kb_key text NOT NULL,
  page_id text NOT NULL,
  kb_id text NOT NULL,
  title text NOT NULL,
  summary text NOT NULL,
  tags text[] NOT NULL,
  aliases text[] NOT NULL,
  links text[] NOT NULL,
  body text NOT NULL,
  confidence text,
  needs_review boolean NOT NULL,
  source jsonb,
  updated_at bigint NOT NULL,
  search tsvector NOT NULL,
  PRIMARY KEY (kb_key, page_id)
);
CREATE INDEX IF NOT EXISTS kb_pages_search ON kb_pages USING gin (search);
CREATE INDEX IF NOT EXISTS kb_pages_tags ON kb_pages USING gin (tags);
CREATE TABLE IF NOT EXISTS kb_links (
  kb_key text NOT NULL,
  from_page text NOT NULL,
  to_page text NOT NULL,
  position integer NOT NULL,
  PRIMARY KEY (kb_key, from_page, to_page)
);
CREATE INDEX IF NOT EXISTS kb_links_backwards ON kb_links (kb_key, to_page);`,

  applyBatch: oneAtATime(async (tx, event, recorded) => {
    switch (event.type) {
      case 'KnowledgeBaseCreated': {
        const kbKey = recorded.streamId.slice('kb-'.length);
        const d = event.data;
        await tx.query(
          `INSERT INTO knowledge_bases (kb_key, kb_id, owner_account_id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
          [kbKey, d.kb_id, d.owner_account_id, d.title, d.at],
        );
        for (const reader of d.reader_account_ids) await tx.query('INSERT INTO kb_readers (kb_key, account_id) VALUES ($1, $2)', [kbKey, reader]);
        return;
      }
      case 'KnowledgeBaseChanged': {
        const kbKey = recorded.streamId.slice('kb-'.length);
        if (event.data.title !== undefined)
          await tx.query('UPDATE knowledge_bases SET title = $2, updated_at = $3 WHERE kb_key = $1', [kbKey, event.data.title, event.data.at]);
        if (event.data.reader_account_ids !== undefined) {
          await tx.query('DELETE FROM kb_readers WHERE kb_key = $1', [kbKey]);
          for (const reader of event.data.reader_account_ids)
            await tx.query('INSERT INTO kb_readers (kb_key, account_id) VALUES ($1, $2)', [kbKey, reader]);
        }
        return;
      }
      case 'PageUpserted': {
        const d = event.data;
        await tx.query(
          `INSERT INTO kb_pages (kb_key, page_id, kb_id, title, summary, tags, aliases, links, body, confidence, needs_review, source, updated_at, search)
           VALUES ($1, $2, $3, $4, $5, $6::text[], $7::text[], $8::text[], $9, $10, $11, $12::jsonb, $13,
                   setweight(to_tsvector('english', $4), 'A') ||
                   setweight(to_tsvector('english', array_to_string($7::text[], ' ')), 'A') ||
                   setweight(to_tsvector('english', array_to_string($6::text[], ' ')), 'B') ||
                   setweight(to_tsvector('english', $5), 'C') ||
                   setweight(to_tsvector('english', $9), 'D'))
           ON CONFLICT (kb_key, page_id) DO UPDATE SET
             title = EXCLUDED.title, summary = EXCLUDED.summary, tags = EXCLUDED.tags, aliases = EXCLUDED.aliases,
             links = EXCLUDED.links, body = EXCLUDED.body, confidence = EXCLUDED.confidence,
             needs_review = EXCLUDED.needs_review, source = EXCLUDED.source, updated_at = EXCLUDED.updated_at,
             search = EXCLUDED.search`,
          [
            d.kb_key,
            d.page_id,
            d.kb_id,
            d.title,
            d.summary,
            d.tags,
            d.aliases,
            d.links,
            d.body,
            d.confidence,
            d.needs_review,
            d.source === null ? null : JSON.stringify(d.source),
            d.at,
          ],
        );
        await tx.query('DELETE FROM kb_links WHERE kb_key = $1 AND from_page = $2', [d.kb_key, d.page_id]);
        const targets = linkedIds(d.links, d.body).filter((id) => id !== d.page_id);
        if (targets.length)
          await tx.query(
            `INSERT INTO kb_links (kb_key, from_page, to_page, position)
             SELECT $1, $2, t, ord::int FROM unnest($3::text[]) WITH ORDINALITY AS u(t, ord)`,
            [d.kb_key, d.page_id, targets],
          );
        return;
      }
      case 'PageDeleted': {
        const [kbKey, pageId] = splitPageStream(recorded.streamId);
        await tx.query('DELETE FROM kb_pages WHERE kb_key = $1 AND page_id = $2', [kbKey, pageId]);
        await tx.query('DELETE FROM kb_links WHERE kb_key = $1 AND from_page = $2', [kbKey, pageId]);
        return;
      }
      default:
        return;
    }
  }),
};

function splitPageStream(streamId: string): [string, string] {
  const rest = streamId.slice('kbpage-'.length);
  const slash = rest.indexOf('/');
  return [rest.slice(0, slash), rest.slice(slash + 1)];
}
