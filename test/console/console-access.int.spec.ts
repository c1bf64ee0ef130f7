/**
 * The console's access rules over HTTP (fastify inject, no browser): a deactivated account's sessions
 * end and its links open nothing; the enterprise page is an enterprise admin's only, and its approve and
 * reject forms go through the admin API's commands (same escrow, same audit rows), behind the CSRF check.
 * Runs on the embedded storage, and on Postgres + Redis when DATABASE_URL / REDIS_URL are set.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';

const REDIS_URL = process.env.REDIS_URL;
let t: TestGateway;

beforeAll(async () => {
  const prefix = `gw:test:console-access:${randomBytes(6).toString('hex')}`;
  t = await startTestGateway(REDIS_URL ? { redisUrl: REDIS_URL, jobsPrefix: prefix, rateLimits: { redisUrl: REDIS_URL, keyPrefix: `${prefix}:` } } : {});
}, 120_000);
afterAll(async () => {
  await t?.close();
});

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
async function ok(method: Method, path: string, body?: unknown, status = method === 'POST' ? 201 : 200) {
  const res = await t.admin(method, path, body);
  if (res.statusCode !== status) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`);
  return res.json();
}
const open = async (name: string) => (await ok('POST', '/accounts', { name })).id as string;
const linkCode = async (accountId: string) => String((await ok('POST', `/accounts/${accountId}/login-link`, {})).url).split('#')[1]!;

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Opens a session as the browser would: the link's code posted to the sign-in form. */
async function signIn(accountId: string): Promise<{ cookie: string; csrf: string }> {
  const res = await t.gateway.app.inject({ method: 'POST', url: '/console/sign-in', headers: FORM, payload: form({ token: await linkCode(accountId) }) });
  expect(res.statusCode).toBe(303);
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  const page = await get(cookie, '/console/');
  expect(page.statusCode).toBe(200);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
  return { cookie, csrf };
}
const get = (cookie: string, url: string) => t.gateway.app.inject({ method: 'GET', url, headers: { cookie } });
const post = (cookie: string, url: string, fields: Record<string, string>) => t.gateway.app.inject({ method: 'POST', url, headers: { cookie, ...FORM }, payload: form(fields) });
const auditOf = async (accountId: string) =>
  (await t.db.sql.query<{ action: string; actor: string | null; details: Record<string, unknown> }>(`SELECT action, actor, details FROM audit_trail WHERE account_id = $1`, [accountId])).filter(
    (r) => r.action.startsWith('Console') || r.action.startsWith('KeyRequest') || r.action.startsWith('Escrow'),
  );

describe('a deactivated account in the console', () => {
  it('ends every session of the account: pages redirect to sign-in saying the account is inactive, forms are refused, and reactivation does not revive them', async () => {
    const accountId = await open('Dora');
    const first = await signIn(accountId);
    const second = await signIn(accountId);
    expect((await get(first.cookie, '/console/keys')).statusCode).toBe(200);

    await ok('POST', `/accounts/${accountId}/deactivate`, {}, 200);

    const page = await get(first.cookie, '/console/keys');
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/console/sign-in?inactive=1');
    expect(String(page.headers['set-cookie'])).toMatch(/^gateway_console=; .*Max-Age=0/);
    const signInPage = await t.gateway.app.inject({ method: 'GET', url: page.headers.location as string });
    expect(signInPage.body).toContain('Your account is inactive');

    // The other session's form: refused, no key created.
    const refused = await post(second.cookie, '/console/keys', { _csrf: second.csrf, name: 'late', allowed_models: '', expires_at: '', spend_cap_usd: '' });
    expect(refused.statusCode).toBe(401);
    expect(refused.body).toContain('Your account is inactive');
    expect((await t.db.sql.query(`SELECT 1 FROM api_keys WHERE account_id = $1 AND name = 'late'`, [accountId])).length).toBe(0);

    // Ended on the server, each recorded.
    const open_ = await t.db.sql.query(`SELECT 1 FROM console_sessions WHERE account_id = $1 AND ended_at IS NULL`, [accountId]);
    expect(open_.length).toBe(0);
    await t.gateway.runner.waitFor(null);
    const ended = (await auditOf(accountId)).filter((r) => r.action === 'ConsoleSessionEnded');
    expect(ended.map((r) => [r.actor, r.details.reason])).toEqual([
      ['system', 'account_inactive'],
      ['system', 'account_inactive'],
    ]);

    // Reactivated: the old sessions stay ended; a new link works.
    await ok('POST', `/accounts/${accountId}/reactivate`, {}, 200);
    const after = await get(first.cookie, '/console/');
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/console/sign-in?ended=1');
    await signIn(accountId);
  });

  it('refuses new links (409 account_inactive in the admin error shape) and a link issued before the deactivation when it is opened', async () => {
    const accountId = await open('Eve');
    const code = await linkCode(accountId);
    await ok('POST', `/accounts/${accountId}/deactivate`, {}, 200);
    const link = await t.admin('POST', `/accounts/${accountId}/login-link`, {});
    expect(link.statusCode).toBe(409);
    expect(link.json()).toMatchObject({ error: { code: 'account_inactive' } });

    const redeemed = await t.gateway.app.inject({ method: 'POST', url: '/console/sign-in', headers: FORM, payload: form({ token: code }) });
    expect(redeemed.statusCode).toBe(403);
    expect(redeemed.headers['set-cookie']).toBeUndefined();
    expect(redeemed.body).toContain('Your account is inactive');
    expect((await t.db.sql.query(`SELECT 1 FROM console_sessions WHERE account_id = $1`, [accountId])).length).toBe(0);
  });

  it('ends the session when the account was deactivated without the admin API (through the ledger, as another instance would)', async () => {
    const accountId = await open('Fay');
    const session = await signIn(accountId);
    const result = await t.gateway.ledger.deactivate(accountId, 'test');
    expect(result.ok).toBe(true);
    const page = await get(session.cookie, '/console/');
    expect(page.headers.location).toBe('/console/sign-in?inactive=1');
    expect((await t.db.sql.query(`SELECT 1 FROM console_sessions WHERE account_id = $1 AND ended_at IS NULL`, [accountId])).length).toBe(0);
  });
});
