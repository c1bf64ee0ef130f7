import type { LightMyRequestResponse } from 'fastify';
import type { TestGateway } from '../support/gateway';

/** A page as the admin API takes it; every field but `title` may be left out. */
export interface PageInput {
  title: string;
  summary?: string;
  tags?: string[];
  aliases?: string[];
  links?: string[];
  body?: string;
  confidence?: string | null;
  needs_review?: boolean;
  source?: { r2_key: string; filename?: string | null; locator?: string | null; compiled_at?: string | null; model?: string | null } | null;
}

export const WIKI = '/api/v1/ext/wiki';

/** Upserts a page through the admin API and fails loudly when refused. */
export async function putPage(t: TestGateway, accountId: string, kbId: string, pageId: string, page: PageInput): Promise<LightMyRequestResponse> {
  const response = await t.admin('PUT', `/accounts/${accountId}/kbs/${kbId}/pages/${encodeURIComponent(pageId)}`, page);
  if (response.statusCode !== 200 && response.statusCode !== 201) throw new Error(`PUT page ${kbId}/${pageId}: ${response.statusCode} ${response.body}`);
  return response;
}

export async function createKb(t: TestGateway, accountId: string, kbId: string, readers: string[] = [], title = `Base ${kbId}`) {
  const response = await t.admin('POST', `/accounts/${accountId}/kbs`, { kb_id: kbId, title, reader_account_ids: readers });
  if (response.statusCode !== 201) throw new Error(`create kb ${kbId}: ${response.statusCode} ${response.body}`);
  return response;
}

/** Stores a source file's bytes with PUT /admin/v1/objects/{key}. */
export async function putObject(t: TestGateway, key: string, bytes: Buffer, contentType = 'application/octet-stream') {
  const response = await t.gateway.app.inject({
    method: 'PUT',
    url: `/admin/v1/objects/${key.split('/').map(encodeURIComponent).join('/')}`,
    headers: { authorization: 'Bearer test-admin-token', 'content-type': contentType },
    payload: bytes,
  });
  if (response.statusCode !== 201) throw new Error(`PUT object ${key}: ${response.statusCode} ${response.body}`);
  return response;
}

/** GET on a wiki endpoint with the key in x-api-key (or no key when `key` is null). */
export function wiki(t: TestGateway, key: string | null, path: string, query: Record<string, string | number> = {}): Promise<LightMyRequestResponse> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return t.gateway.app.inject({
    method: 'GET',
    url: `${WIKI}${path}${qs ? `?${qs}` : ''}`,
    headers: key === null ? {} : { 'x-api-key': key },
  });
}

/** Path and query of an absolute URL (to replay a signed link with `inject`). */
export const pathOf = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

export const byId = <T extends { id: string }>(items: readonly T[]) => [...items].sort((a, b) => a.id.localeCompare(b.id));
