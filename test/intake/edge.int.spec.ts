import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
import { putObject, putPage } from '../knowledge/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

type Json = Record<string, any>;

let g: SimulatedGateway;
let A: { accountId: string; key: string };

beforeAll(async () => {
  g = await startSimulatedGateway(chatConfig);
  A = await g.t.accountWithKey();
  await putObject(g.t, 'edge/source.html', Buffer.from('<script>alert(1)</script>'), 'text/plain');
  await putPage(g.t, A.accountId, 'default', 'alpha', { title: 'Alpha', body: 'spooky action', source: { r2_key: 'edge/source.html', filename: 'source.html' } });
});
afterAll(() => g.close());

const get = (path: string, headers: Record<string, string> = { 'x-api-key': A.key }) => fetch(`${g.baseUrl}${path}`, { headers });
const admin = (method: string, path: string) => fetch(`${g.baseUrl}/admin/v1${path}`, { method, headers: { authorization: 'Bearer test-admin-token' } });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('400, not 500, for what a client sends', () => {
  it('a NUL character in a wiki query, page id, id list, tag or kb_id', async () => {
    for (const path of [
      '/api/v1/ext/wiki/search?q=a%00b',
      '/api/v1/ext/wiki/pages/alpha%00',
      '/api/v1/ext/wiki/pages?ids=alpha,b%00',
      '/api/v1/ext/wiki/pages/alpha/backlinks?kb_id=x%00',
      '/api/v1/ext/wiki/tags/t%00g',
    ]) {
      const response = await get(path);
      expect(response.status, path).toBe(400);
      expect(((await response.json()) as Json).error, path).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    }
  });

  it('a NUL character in an admin id or body, in the admin shape', async () => {
    for (const [method, path] of [
      ['GET', '/accounts/a%00b'],
      ['GET', `/accounts/${A.accountId}%00/keys`],
      ['POST', '/keys/k%00/revoke'],
    ] as const) {
      const response = await admin(method, path);
      expect(response.status, path).toBe(400);
      const body = (await response.json()) as Json;
      expect(body.error.code, path).toBe('invalid_request');
      expect(body.error.message, path).toMatch(/NUL/);
    }
    // In an admin body too: a kb id, an account name.
    for (const [path, body] of [
      [`/accounts/${A.accountId}/kbs`, { kb_id: 'k\u0000', title: 'Base' }],
      ['/accounts', { name: 'a\u0000b' }],
    ] as const) {
      const response = await g.t.admin('POST', path, body);
      expect(response.statusCode, path).toBe(400);
      expect(response.json().error, path).toEqual({ code: 'invalid_request', message: 'the request body must not contain NUL (U+0000) characters' });
    }
  });

  it('times and revisions beyond what a bigint holds', async () => {
    const usage = await get('/api/v1/usage?from=99999999999999999999');
    expect(usage.status).toBe(400);
    expect(((await usage.json()) as Json).error.code).toBe('invalid_request');
    expect((await get('/api/v1/usage?to=9223372036854775808')).status).toBe(400);
    expect((await get('/api/v1/usage?from=0&to=9007199254740991')).status).toBe(200);

    for (const path of [
      `/accounts/${A.accountId}/ledger?from_revision=9223372036854775808`,
      `/accounts/${A.accountId}/ledger?from_revision=-1`,
      `/accounts/${A.accountId}/logs?from=99999999999999999999`,
      `/accounts/${A.accountId}/logs.csv?to=99999999999999999999`,
      `/accounts/${A.accountId}/logs?cursor=99999999999999999999:00000000-0000-0000-0000-000000000000`,
    ]) {
      const response = await admin('GET', path);
      expect(response.status, path).toBe(400);
      expect(((await response.json()) as Json).error.code, path).toBe('invalid_request');
    }
    const last = await admin('GET', `/accounts/${A.accountId}/ledger?from_revision=9223372036854775807`);
    expect(last.status).toBe(200);
    expect(((await last.json()) as Json).data).toEqual([]);
  });

  it('a malformed multipart body', async () => {
    const response = await fetch(`${g.baseUrl}/v1/images/edits`, {
      method: 'POST',
      headers: { 'x-api-key': A.key, 'content-type': 'multipart/form-data; boundary=xx' },
      body: '--xx\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg-model',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Json).error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
  });

  it('a URL the router cannot decode, in the shape of the API it names', async () => {
    const chat = await get('/v1/chat/completions%zz');
    expect(chat.status).toBe(400);
    expect(((await chat.json()) as Json).error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    const messages = await get('/v1/messages/%zz');
    expect(messages.status).toBe(400);
    expect(((await messages.json()) as Json).type).toBe('error');
    const generate = await get('/v1beta/models/%zz');
    expect(((await generate.json()) as Json).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    const adminBad = await admin('GET', '/accounts/%zz');
    expect(adminBad.status).toBe(400);
    expect(((await adminBad.json()) as Json).error.code).toBe('invalid_request');
  });

  it('a page id of up to 200 characters can be written and read (not a 414 in fastify shape)', async () => {
    const id = `p${'x'.repeat(199)}`;
    await putPage(g.t, A.accountId, 'default', id, { title: 'Long id' });
    const response = await get(`/api/v1/ext/wiki/pages/${id}`);
    expect(response.status).toBe(200);
    expect(((await response.json()) as Json).id).toBe(id);
  });
});

describe('MCP answers in JSON-RPC, never with the database text', () => {
  it('a NUL character in a tool argument is refused without reaching the database', async () => {
    const response = await fetch(`${g.baseUrl}/mcp`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'x-api-key': A.key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_wiki', arguments: { q: 'a\u0000b' } } }),
    });
    const text = await response.text();
    expect(text).not.toMatch(/byte sequence|UTF8|0x00/);
    expect(text).toMatch(/NUL/);
  });

  it('a body over 1 MB, a body that is not JSON, and a body on DELETE', async () => {
    const big = await fetch(`${g.baseUrl}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, 'x-api-key': A.key }, body: `"${'x'.repeat(1024 * 1024)}"` });
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: "the request body is over this endpoint's limit of 1 MB" }, id: null });
    const broken = await fetch(`${g.baseUrl}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, 'x-api-key': A.key }, body: '{"jsonrpc":' });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 }, id: null });
    const remove = await fetch(`${g.baseUrl}/mcp`, { method: 'DELETE', headers: { 'content-type': 'application/json' }, body: '{bad' });
    expect(remove.status).toBe(405);
    expect(await remove.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
  });
});

describe('credentials and links', () => {
  it('a key in a percent-encoded ?key= authenticates but never reaches a log line', async () => {
    const response = await get(`/v1/key/balance?%6Bey=${A.key}`, {});
    expect(response.status).toBe(200);
    const inPath = await get(`/v1/${encodeURIComponent(A.key)}`, {});
    expect(inPath.status).toBe(404);
    expect(await inPath.text()).not.toContain(A.key);
    const logs = g.t.logs.join('\n');
    expect(logs).toContain('%6Bey=[redacted]');
    expect(logs).not.toContain(A.key);
    expect(logs).not.toContain(A.key.slice(12));
  });

  it('a source link names the gateway, not the Host header the client sent', async () => {
    const response = await request(`${g.baseUrl}/api/v1/ext/wiki/pages/alpha/source`, { headers: { 'x-api-key': A.key, host: 'evil.example' } });
    expect(response.statusCode).toBe(200);
    const link = (await response.body.json()) as Json;
    expect(new URL(link.url).origin).toBe(g.baseUrl);
  });

  it('a download says nosniff, so a browser keeps to the stored content type', async () => {
    const link = (await (await get('/api/v1/ext/wiki/pages/alpha/source')).json()) as Json;
    const download = await fetch(link.url);
    expect(download.status).toBe(200);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-type')).toBe('text/plain');
  });
});
