import { personalKbKey } from '../../events/catalog';
import type { SqlQuery } from '../../storage/sql';

export interface ReadableKb {
  readonly kbKey: string;
  readonly kbId: string;
  readonly title: string;
  readonly ownerAccountId: string;
  readonly access: 'personal' | 'owner' | 'reader';
}

export interface PageSourceView {
  readonly r2_key: string;
  readonly filename: string | null;
  readonly locator: string | null;
  readonly compiled_at: string | null;
  readonly model: string | null;
}

export interface PageSummary {
  readonly id: string;
  readonly kb_id: string;
  readonly title: string;
  readonly summary: string;
  readonly tags: string[];
  readonly confidence: string | null;
  readonly needs_review: boolean;
}

export interface PageView extends PageSummary {
  readonly aliases: string[];
  readonly links: string[];
  body: string;
  readonly source: PageSourceView | null;
  readonly outgoing_links: Array<{ id: string; resolved: boolean; title: string | null }>;
}

export interface SearchHit extends PageSummary {
  readonly snippet: string;
  readonly score: number;
}

interface PageRow {
  kb_key: string;
  page_id: string;
  kb_id: string;
  title: string;
  summary: string;
  tags: string[];
  aliases: string[];
  links: string[];
  body: string;
  confidence: string | null;
  needs_review: boolean;
  source: PageSourceView | null;
}

const summaryOf = (row: PageRow, kbId: string): PageSummary => ({
  id: row.page_id,
  kb_id: kbId,
  title: row.title,
  summary: row.summary,
  tags: row.tags,
  confidence: row.confidence,
  needs_review: row.needs_review,
});

/** The reader's own name for a base: `default` for their personal one. */
const kbIdFor = (kbs: readonly ReadableKb[], kbKey: string) => kbs.find((k) => k.kbKey === kbKey)?.kbId ?? kbKey;

/**
 * Read side of the knowledge bases. Every query takes the reader's readable bases,
 * so nothing outside them can be returned; the HTTP layer turns "not readable" and
 * "missing" into the same 404.
 */
export class KnowledgeQueries {
  constructor(private readonly sql: SqlQuery) {}

  /** Personal base first, then owned team bases, then bases shared with the account. */
  async readableKbs(accountId: string): Promise<ReadableKb[]> {
    const rows = await this.sql.query<{ kb_key: string; kb_id: string; title: string; owner_account_id: string; owner: boolean }>(
      `SELECT kb.kb_key, kb.kb_id, kb.title, kb.owner_account_id, kb.owner_account_id = $1 AS owner
         FROM knowledge_bases kb
        WHERE kb.owner_account_id = $1
           OR EXISTS (SELECT 1 FROM kb_readers r WHERE r.kb_key = kb.kb_key AND r.account_id = $1)
        ORDER BY (kb.owner_account_id = $1) DESC, kb.kb_id`,
      [accountId],
    );
    return [
      { kbKey: personalKbKey(accountId), kbId: 'default', title: 'Personal knowledge', ownerAccountId: accountId, access: 'personal' },
      ...rows.map((r) => ({ kbKey: r.kb_key, kbId: r.kb_id, title: r.title, ownerAccountId: r.owner_account_id, access: r.owner ? ('owner' as const) : ('reader' as const) })),
    ];
  }

  async readableKb(accountId: string, kbId: string): Promise<ReadableKb | null> {
    return (await this.readableKbs(accountId)).find((k) => k.kbId === kbId) ?? null;
  }

  async pageCounts(kbKeys: readonly string[]): Promise<Map<string, number>> {
    const rows = await this.sql.query<{ kb_key: string; n: string }>(
      'SELECT kb_key, count(*)::text AS n FROM kb_pages WHERE kb_key = ANY($1::text[]) GROUP BY kb_key',
      [kbKeys],
    );
    return new Map(rows.map((r) => [r.kb_key, Number(r.n)]));
  }

  async search(kbs: readonly ReadableKb[], q: string, limit: number, offset: number): Promise<{ total: number; hits: SearchHit[] }> {
    const rows = await this.sql.query<PageRow & { snippet: string; score: number; total: string }>(
      `WITH query AS (SELECT websearch_to_tsquery('english', $2) AS q),
            matched AS (
              SELECT p.*, ts_rank(p.search, query.q) AS score, count(*) OVER () AS total
                FROM kb_pages p, query
               WHERE p.kb_key = ANY($1::text[]) AND p.search @@ query.q
               ORDER BY score DESC, p.title, p.page_id
               LIMIT $3 OFFSET $4)
       SELECT m.kb_key, m.page_id, m.kb_id, m.title, m.summary, m.tags, m.confidence, m.needs_review,
              round(m.score::numeric, 6)::float8 AS score, m.total::text AS total,
              ts_headline('english', CASE WHEN m.body = '' THEN m.summary ELSE m.body END, query.q,
                          'StartSel=**, StopSel=**, MaxWords=35, MinWords=12, MaxFragments=2, FragmentDelimiter=" … "') AS snippet
         FROM matched m, query
        ORDER BY m.score DESC, m.title, m.page_id`,
      [kbs.map((k) => k.kbKey), q, limit, offset],
    );
    let total = Number(rows[0]?.total ?? 0);
    if (rows.length === 0 && offset > 0) {
      const [count] = await this.sql.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM kb_pages WHERE kb_key = ANY($1::text[]) AND search @@ websearch_to_tsquery('english', $2)`,
        [kbs.map((k) => k.kbKey), q],
      );
      total = Number(count?.n ?? 0);
    }
    return {
      total,
      hits: rows.map((r) => ({ ...summaryOf(r, kbIdFor(kbs, r.kb_key)), snippet: r.snippet, score: Number(r.score) })),
    };
  }

  /** Pages by id, in the order asked, missing ones left out. */
  async pages(kb: ReadableKb, ids: readonly string[]): Promise<PageView[]> {
    const rows = await this.sql.query<PageRow>('SELECT * FROM kb_pages WHERE kb_key = $1 AND page_id = ANY($2::text[])', [kb.kbKey, ids]);
    const links = await this.sql.query<{ from_page: string; to_page: string; title: string | null }>(
      `SELECT l.from_page, l.to_page, p.title FROM kb_links l
         LEFT JOIN kb_pages p ON p.kb_key = l.kb_key AND p.page_id = l.to_page
        WHERE l.kb_key = $1 AND l.from_page = ANY($2::text[]) ORDER BY l.from_page, l.position`,
      [kb.kbKey, ids],
    );
    const byId = new Map(rows.map((r) => [r.page_id, r]));
    return ids.flatMap((id) => {
      const row = byId.get(id);
      if (!row) return [];
      return [
        {
          ...summaryOf(row, kb.kbId),
          aliases: row.aliases,
          links: row.links,
          body: row.body,
          source: row.source,
          outgoing_links: links.filter((l) => l.from_page === id).map((l) => ({ id: l.to_page, resolved: l.title !== null, title: l.title })),
        },
      ];
    });
  }

  async page(kb: ReadableKb, id: string): Promise<PageView | null> {
    return (await this.pages(kb, [id]))[0] ?? null;
  }

  /** The first readable base (personal, owned, shared) that has a page with this id. */
  async findPage(kbs: readonly ReadableKb[], id: string): Promise<{ kb: ReadableKb; page: PageView } | null> {
    const rows = await this.sql.query<{ kb_key: string }>('SELECT kb_key FROM kb_pages WHERE page_id = $1 AND kb_key = ANY($2::text[])', [
      id,
      kbs.map((k) => k.kbKey),
    ]);
    const kb = kbs.find((k) => rows.some((r) => r.kb_key === k.kbKey));
    if (!kb) return null;
    const page = await this.page(kb, id);
    return page ? { kb, page } : null;
  }

  async backlinks(kb: ReadableKb, id: string): Promise<PageSummary[]> {
    const rows = await this.sql.query<PageRow>(
      `SELECT p.* FROM kb_links l JOIN kb_pages p ON p.kb_key = l.kb_key AND p.page_id = l.from_page
        WHERE l.kb_key = $1 AND l.to_page = $2 ORDER BY p.title, p.page_id`,
      [kb.kbKey, id],
    );
    return rows.map((r) => summaryOf(r, kb.kbId));
  }

  async tags(kb: ReadableKb): Promise<Array<{ tag: string; count: number }>> {
    const rows = await this.sql.query<{ tag: string; n: string }>(
      `SELECT tag, count(*)::text AS n FROM kb_pages, unnest(tags) AS tag WHERE kb_key = $1 GROUP BY tag ORDER BY count(*) DESC, tag`,
      [kb.kbKey],
    );
    return rows.map((r) => ({ tag: r.tag, count: Number(r.n) }));
  }

  /** Every page under the tag (light summaries, no bodies): the count /tags reports. */
  async pagesByTag(kbs: readonly ReadableKb[], tag: string): Promise<PageSummary[]> {
    const rows = await this.sql.query<PageRow>(
      `SELECT kb_key, page_id, kb_id, title, summary, tags, confidence, needs_review
         FROM kb_pages WHERE kb_key = ANY($1::text[]) AND tags @> ARRAY[$2]::text[] ORDER BY title, page_id`,
      [kbs.map((k) => k.kbKey), tag],
    );
    return rows.map((r) => summaryOf(r, kbIdFor(kbs, r.kb_key)));
  }
}
