import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { byId, createKb, putObject, putPage } from './support';

let t: TestGateway;
let base: string;
let A: { accountId: string; key: string };
let B: { accountId: string; key: string };
let C: { accountId: string; key: string };
const clients: Client[] = [];

const LONG_BODY = '0123456789'.repeat(1000); // 10000 characters
const SOURCE = randomBytes(5000);
const BULK = 60;

beforeAll(async () => {
  t = await startTestGateway();
  A = await t.accountWithKey();
  B = await t.accountWithKey();
  C = await t.accountWithKey();

  await putObject(t, 'mcp/alpha.bin', SOURCE);
  await putPage(t, A.accountId, 'default', 'alpha', {
    title: 'Quantum Entanglement Primer',
    summary: 'A short primer.',
    tags: ['physics'],
    links: ['beta'],
    body: 'Spooky action; see [[gamma]].',
    confidence: 'medium',
    source: { r2_key: 'mcp/alpha.bin', filename: 'alpha.bin', locator: 'section 2' },
  });
  await putPage(t, A.accountId, 'default', 'beta', { title: 'Beta', body: 'entanglement in the body only' });
  await putPage(t, A.accountId, 'default', 'gamma', { title: 'Gamma', tags: ['physics'], body: 'back to [[alpha]]' });
  await putPage(t, A.accountId, 'default', 'long', { title: 'Long page', body: LONG_BODY });
  for (let i = 0; i < BULK; i++) {
    const n = String(i).padStart(2, '0');
    await putPage(t, A.accountId, 'default', `bulk-${n}`, { title: `Bulk ${n}`, tags: ['bulk'], body: `zebra number ${n} ${'filler '.repeat(300)}` });
  }
  // Team base of A, readable by B.
  await createKb(t, A.accountId, 'team-m', [B.accountId]);
  await putPage(t, A.accountId, 'team-m', 'team-page', { title: 'Team roadmap', tags: ['shared'], body: 'the shared roadmap, see [[team-other]]' });
  await putPage(t, A.accountId, 'team-m', 'team-other', { title: 'Team other', tags: ['shared'], body: 'more shared roadmap' });
  // B's personal page.
  await putPage(t, B.accountId, 'default', 'b-note', { title: 'B note', tags: ['shared'], body: 'roadmap notes of B' });
  // C's personal page and C's own team base, readable by nobody else.
  await putPage(t, C.accountId, 'default', 'c-secret', { title: 'C secret roadmap', tags: ['shared'], body: 'roadmap secret of C' });
  await createKb(t, C.accountId, 'team-c', []);
  await putPage(t, C.accountId, 'team-c', 'c-team-secret', { title: 'C team roadmap', tags: ['shared'], body: 'roadmap of team C, links [[team-page]]' });

  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.gateway.app.server.address() as { port: number };
  base = `http://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  await t.close();
});

async function connect(headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'knowledge-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

type Json = any;

/** Calls a tool and returns its structured result; fails on a tool error. */
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Json> {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  const content = result.content as Array<{ type: string; text: string }>;
  expect(content[0]!.type).toBe('text');
  // The text content and the structured content say the same.
  expect(JSON.parse(content[0]!.text)).toEqual(result.structuredContent);
  return result.structuredContent;
}

async function callError(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  return result;
}

const ids = (items: Array<{ id: string }>) => items.map((i) => i.id);

describe('MCP server at /mcp, through the SDK client', () => {
  it('lists the 6 tools with their parameters', async () => {
    const client = await connect(bearer(A.key));
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['backlinks', 'get_source', 'list_by_tag', 'read_page', 'read_pages', 'search_wiki']);
    const schema = (name: string) => tools.find((tool) => tool.name === name)!.inputSchema as { properties: Record<string, Json>; required?: string[] };
    expect(Object.keys(schema('search_wiki').properties).sort()).toEqual(['limit', 'offset', 'q']);
    expect(schema('search_wiki').required).toEqual(['q']);
    expect(schema('search_wiki').properties.limit.type).toMatch(/integer|number/);
    expect(schema('search_wiki').properties.offset.type).toMatch(/integer|number/);
    expect(Object.keys(schema('read_page').properties)).toEqual(['id']);
    expect(schema('read_page').required).toEqual(['id']);
    expect(Object.keys(schema('read_pages').properties)).toEqual(['ids']);
    expect(schema('read_pages').properties.ids.type).toBe('array');
    expect(schema('read_pages').required).toEqual(['ids']);
    expect(Object.keys(schema('list_by_tag').properties)).toEqual(['tag']);
    expect(Object.keys(schema('backlinks').properties)).toEqual(['id']);
    expect(Object.keys(schema('get_source').properties)).toEqual(['id']);
    // No kb_id parameter anywhere: the scope is the key's.
    for (const tool of tools) expect(Object.keys((tool.inputSchema as { properties: object }).properties)).not.toContain('kb_id');
  });

  it('search_wiki: light hits, limit default 10 and max 50, offset', async () => {
    const client = await connect({ 'x-api-key': A.key });
    const first = await call(client, 'search_wiki', { q: 'zebra' });
    expect(first).toMatchObject({ total_hits: BULK, offset: 0, returned: 10, has_more: true });
    expect(first.results).toHaveLength(10);
    for (const hit of first.results) {
      expect(hit).toEqual(expect.objectContaining({ id: expect.any(String), title: expect.any(String), snippet: expect.any(String), score: expect.any(Number) }));
      expect(hit).toHaveProperty('summary');
      expect(hit).toHaveProperty('tags');
      expect(hit).toHaveProperty('confidence');
      expect(hit).toHaveProperty('needs_review');
      expect(hit).not.toHaveProperty('body');
    }
    const capped = await call(client, 'search_wiki', { q: 'zebra', limit: 80 });
    expect(capped).toMatchObject({ total_hits: BULK, returned: 50, has_more: true });
    const tail = await call(client, 'search_wiki', { q: 'zebra', limit: 50, offset: 55 });
    expect(tail).toMatchObject({ total_hits: BULK, offset: 55, returned: 5, has_more: false });
    const all = new Set([...ids(capped.results), ...ids((await call(client, 'search_wiki', { q: 'zebra', limit: 50, offset: 50 })).results)]);
    expect(all.size).toBe(BULK);
    // Weighted: the title match first.
    expect(ids((await call(client, 'search_wiki', { q: 'entanglement' })).results)).toEqual(['alpha', 'beta']);
  });

  it('read_page: every field, body up to 8000 characters', async () => {
    const client = await connect(bearer(A.key));
    const page = await call(client, 'read_page', { id: 'alpha' });
    expect(page).toMatchObject({
      id: 'alpha',
      title: 'Quantum Entanglement Primer',
      summary: 'A short primer.',
      tags: ['physics'],
      links: ['beta'],
      body: 'Spooky action; see [[gamma]].',
      confidence: 'medium',
      needs_review: false,
      source: { r2_key: 'mcp/alpha.bin', filename: 'alpha.bin', locator: 'section 2' },
    });
    expect(byId(page.outgoing_links)).toEqual([
      { id: 'beta', resolved: true, title: 'Beta' },
      { id: 'gamma', resolved: true, title: 'Gamma' },
    ]);
    const long = await call(client, 'read_page', { id: 'long' });
    expect(long.body).toHaveLength(8000);
    expect(long.body).toBe(LONG_BODY.slice(0, 8000));
    expect(long.body_truncated).toBe(true);
    const missing = await callError(client, 'read_page', { id: 'no-such-page' });
    expect(missing.isError).toBe(true);
  });

  it('read_pages: at most 25 ids, 1200-character excerpts', async () => {
    const client = await connect(bearer(A.key));
    const wanted = ['long', ...Array.from({ length: 29 }, (_, i) => `bulk-${String(i).padStart(2, '0')}`)];
    const result = await call(client, 'read_pages', { ids: wanted });
    expect(ids(result.pages)).toEqual(wanted.slice(0, 25));
    for (const page of result.pages) expect([...page.body].length).toBeLessThanOrEqual(1200);
    expect(result.pages[0].body).toBe(LONG_BODY.slice(0, 1200));
    expect(result.pages[0].body_truncated).toBe(true);
    const short = await call(client, 'read_pages', { ids: ['alpha', 'nope'] });
    expect(ids(short.pages)).toEqual(['alpha']);
    expect(short.pages[0].body).toBe('Spooky action; see [[gamma]].');
    expect(short.pages[0].body_truncated).toBe(false);
  });

  it('list_by_tag and backlinks', async () => {
    const client = await connect(bearer(A.key));
    expect(ids((await call(client, 'list_by_tag', { tag: 'physics' })).pages).sort()).toEqual(['alpha', 'gamma']);
    expect((await call(client, 'list_by_tag', { tag: 'bulk' })).pages).toHaveLength(BULK);
    expect(ids((await call(client, 'backlinks', { id: 'gamma' })).backlinks)).toEqual(['alpha']);
    expect(ids((await call(client, 'backlinks', { id: 'alpha' })).backlinks)).toEqual(['gamma']);
    expect(ids((await call(client, 'backlinks', { id: 'beta' })).backlinks)).toEqual(['alpha']);
  });

  it('get_source: a link that downloads the stored bytes', async () => {
    const client = await connect({ 'x-api-key': A.key });
    const link = await call(client, 'get_source', { id: 'alpha' });
    expect(link).toMatchObject({ r2_key: 'mcp/alpha.bin', filename: 'alpha.bin', locator: 'section 2', url_ttl_secs: 3600 });
    const download = await fetch(link.url);
    expect(download.status).toBe(200);
    expect(Buffer.compare(Buffer.from(await download.arrayBuffer()), SOURCE)).toBe(0);
    expect((await callError(client, 'get_source', { id: 'beta' })).isError).toBe(true);
  });

  it('scope: personal plus permitted bases; nothing else is ever returned', async () => {
    const a = await connect(bearer(A.key));
    const b = await connect(bearer(B.key));
    const c = await connect({ 'x-api-key': C.key });

    const roadmap = async (client: Client) => ids((await call(client, 'search_wiki', { q: 'roadmap', limit: 50 })).results).sort();
    expect(await roadmap(a)).toEqual(['team-other', 'team-page']);
    expect(await roadmap(b)).toEqual(['b-note', 'team-other', 'team-page']);
    expect(await roadmap(c)).toEqual(['c-secret', 'c-team-secret']);

    const shared = async (client: Client) => ids((await call(client, 'list_by_tag', { tag: 'shared' })).pages).sort();
    expect(await shared(a)).toEqual(['team-other', 'team-page']);
    expect(await shared(b)).toEqual(['b-note', 'team-other', 'team-page']);
    expect(await shared(c)).toEqual(['c-secret', 'c-team-secret']);

    // B reads A's team pages, not A's personal ones, nor C's.
    expect((await call(b, 'read_page', { id: 'team-page' })).title).toBe('Team roadmap');
    expect((await call(b, 'read_page', { id: 'team-page' })).kb_id).toBe('team-m');
    for (const id of ['alpha', 'c-secret', 'c-team-secret']) {
      expect((await callError(b, 'read_page', { id })).isError, id).toBe(true);
      expect((await callError(b, 'backlinks', { id })).isError, id).toBe(true);
      expect((await callError(b, 'get_source', { id })).isError, id).toBe(true);
    }
    expect(ids((await call(b, 'read_pages', { ids: ['alpha', 'team-page', 'c-secret', 'b-note'] })).pages)).toEqual(['team-page', 'b-note']);
    // C's page links to team-page, but C's base is not readable by B: no such backlink.
    expect(ids((await call(b, 'backlinks', { id: 'team-other' })).backlinks)).toEqual(['team-page']);
    expect(ids((await call(b, 'backlinks', { id: 'team-page' })).backlinks)).toEqual([]);
    // C sees nothing of A's or B's.
    expect((await call(c, 'search_wiki', { q: 'zebra' })).total_hits).toBe(0);
    expect((await callError(c, 'read_page', { id: 'team-page' })).isError).toBe(true);
    expect((await call(c, 'read_pages', { ids: ['alpha', 'b-note', 'team-page'] })).pages).toEqual([]);

    // Access follows the readers list, on the next request.
    expect((await t.admin('PATCH', `/accounts/${A.accountId}/kbs/team-m`, { reader_account_ids: [C.accountId] })).statusCode).toBe(200);
    expect(await roadmap(b)).toEqual(['b-note']);
    expect(await roadmap(c)).toEqual(['c-secret', 'c-team-secret', 'team-other', 'team-page']);
    expect((await t.admin('PATCH', `/accounts/${A.accountId}/kbs/team-m`, { reader_account_ids: [B.accountId] })).statusCode).toBe(200);
    expect(await roadmap(b)).toEqual(['b-note', 'team-other', 'team-page']);
  });

  it('refuses a missing or bad key with 401', async () => {
    for (const headers of [{}, { 'x-api-key': 'sk-short' } as Record<string, string>, bearer(`sk-AAAAAAAA-${'0'.repeat(64)}`), { 'x-api-key': `sk-AAAAAAAA-${'1'.repeat(64)}` }]) {
      await expect(connect(headers), JSON.stringify(headers)).rejects.toMatchObject({ code: 401 });
    }
    const raw = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(raw.status).toBe(401);
    expect(((await raw.json()) as Json).error.code).toBe('invalid_api_key');
  });

  it('GET /mcp answers 405', async () => {
    const response = await fetch(`${base}/mcp`, { headers: { accept: 'text/event-stream', 'x-api-key': A.key } });
    expect(response.status).toBe(405);
    await response.body?.cancel();
  });

  it('works at a zero balance (free)', async () => {
    const D = await t.accountWithKey();
    await putPage(t, D.accountId, 'default', 'd-page', { title: 'D page', body: 'walrus' });
    const ledger = t.gateway.ledger;
    expect((await ledger.reserve(D.accountId, { holdId: 'mcp-h1', amount: parseUsd('40.44'), keyId: null, purpose: 'test', ttlSeconds: 60 })).ok).toBe(true);
    expect((await ledger.settle(D.accountId, 'mcp-h1', parseUsd('40.44'))).ok).toBe(true);
    const client = await connect(bearer(D.key));
    expect(ids((await call(client, 'search_wiki', { q: 'walrus' })).results)).toEqual(['d-page']);
    expect((await call(client, 'read_page', { id: 'd-page' })).title).toBe('D page');
    expect((await ledger.wallet(D.accountId)).balance).toBe(0n);
  });

  it('answers a plain JSON-RPC POST in JSON (stateless, no session id)', async () => {
    const response = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': A.key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'search_wiki', arguments: { q: 'spooky' } } }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    const body = (await response.json()) as Json;
    expect(body.id).toBe(7);
    expect(body.result.structuredContent.results.map((h: { id: string }) => h.id)).toEqual(['alpha']);
  });
});
