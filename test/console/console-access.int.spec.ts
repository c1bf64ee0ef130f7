/**
 * The console's access rules over HTTP (fastify inject, no browser): a deactivated account's sessions
 * end and its links open nothing; the enterprise page is an enterprise admin's only, and its approve and
 * reject forms go through the admin API's commands (same escrow, same audit rows), behind the CSRF check;
 * no cookie a client sends can make a console page fail (issue 31, item 8); the sign-in form refuses another
 * origin as every other form does (item 10).
 * Runs on the embedded storage, and on Postgres + Redis when DATABASE_URL / REDIS_URL are set.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvedKeyId } from '../../src/commands/enterprise/service';
import { escrowLeft } from '../../src/commands/wallet/state';
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
async function signIn(accountId: string, remoteAddress = '127.0.0.1'): Promise<{ cookie: string; csrf: string }> {
  const res = await t.gateway.app.inject({ method: 'POST', url: '/console/sign-in', remoteAddress, headers: FORM, payload: form({ token: await linkCode(accountId) }) });
  expect(res.statusCode).toBe(303);
  const setCookie = String(res.headers['set-cookie']);
  // Eight hours (less the second the redemption may have taken), for the console's pages only, out of scripts' reach.
  expect(setCookie.split('; ').slice(1).sort()).toEqual(['HttpOnly', expect.stringMatching(/^Max-Age=28(799|800)$/), 'Path=/console', 'SameSite=Lax']);
  const cookie = setCookie.split(';')[0]!;
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
    await t.gateway.runner.waitFor(await t.gateway.storage.store.headPosition());
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

describe('the enterprise page', () => {
  let ent: string;
  let alice: string; // enterprise admin
  let bob: string; // member
  let agent: { id: string };
  let req1: { id: string };
  let req2: { id: string };
  let req3: { id: string };

  beforeAll(async () => {
    ent = await open('Acme');
    alice = await open('alice');
    bob = await open('bob');
    await ok('POST', `/accounts/${ent}/topups`, { amount_usd: '200.00', reference: 'inv-1' });
    await ok('PUT', `/accounts/${ent}/enterprise`, { allowed_models: null }, 200);
    await ok('PUT', `/accounts/${ent}/members/${alice}`, { role: 'admin' }, 200);
    await ok('PUT', `/accounts/${ent}/members/${bob}`, { role: 'member' }, 200);
    agent = await ok('POST', `/accounts/${ent}/agents`, { name: 'Support <bot>', creator_account_id: bob, system_prompt: 'You help.' });
    req1 = await ok('POST', `/agents/${agent.id}/key-requests`, { name: "bob's key", requested_by: bob, spend_cap_usd: '4.00' });
    req2 = await ok('POST', `/agents/${agent.id}/key-requests`, { name: 'too big', requested_by: bob, spend_cap_usd: '900.00' });
    req3 = await ok('POST', `/agents/${agent.id}/key-requests`, { name: 'unwanted', requested_by: bob, spend_cap_usd: '1.00' });
    await t.gateway.runner.waitFor(await t.gateway.storage.store.headPosition());
  });

  it('is listed and opens for an enterprise admin only; a member and an outsider get 404', async () => {
    const a = await signIn(alice);
    const page = await get(a.cookie, '/console/enterprise');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toContain('<a href="/console/enterprise" aria-current="page">Enterprise</a>');
    expect(page.body).toContain('Support &lt;bot&gt;');
    expect(page.body).toContain(`data-request="${req1.id}"`);
    expect(page.body).toContain('$4.00');
    expect(page.body).not.toMatch(/<script>/);

    const b = await signIn(bob);
    const overview = await get(b.cookie, '/console/');
    expect(overview.body).not.toContain('/console/enterprise');
    expect((await get(b.cookie, '/console/enterprise')).statusCode).toBe(404);
    expect((await get(b.cookie, `/console/enterprise?id=${ent}`)).statusCode).toBe(404);
    // A member cannot decide either, even with a good CSRF token.
    expect((await post(b.cookie, `/console/enterprise/requests/${req3.id}/reject`, { _csrf: b.csrf })).statusCode).toBe(404);
    // Alice cannot open an enterprise she is not an admin of by naming it.
    expect((await get(a.cookie, `/console/enterprise?id=${bob}`)).statusCode).toBe(404);
  });

  it('approves through the admin API command: escrow funded, key issued and shown once, audit rows as the admin API writes them; refused without the CSRF token', async () => {
    const a = await signIn(alice);
    const refused = await post(a.cookie, `/console/enterprise/requests/${req1.id}/approve`, {});
    expect(refused.statusCode).toBe(403);
    const wrong = await post(a.cookie, `/console/enterprise/requests/${req1.id}/approve`, { _csrf: 'x'.repeat(43) });
    expect(wrong.statusCode).toBe(403);
    expect((await t.gateway.enterprises.request(req1.id)).status).toBe('pending');

    const approved = await post(a.cookie, `/console/enterprise/requests/${req1.id}/approve`, { _csrf: a.csrf });
    expect(approved.statusCode).toBe(201);
    expect(approved.headers['cache-control']).toBe('no-store');
    const raw = /<code id="raw-key">([^<]+)<\/code>/.exec(approved.body)![1]!;
    const keyId = approvedKeyId(req1.id);
    expect((await t.gateway.enterprises.request(req1.id)).status).toBe('approved');
    const wallet = await t.gateway.ledger.wallet(ent);
    expect(escrowLeft(wallet, keyId)).toBe(4_000_000_000n);
    // The raw key is a working key of the enterprise, bound to the agent.
    expect((await t.gateway.ledger.key(keyId)).accountId).toBe(ent);
    expect(raw.length).toBeGreaterThan(40);

    // The list afterwards: the key with its escrow left, never the raw key; the request gone from pending.
    const page = await get(a.cookie, '/console/enterprise');
    expect(page.body).toContain(`data-key="${keyId}"`);
    expect(page.body).not.toContain(raw);
    expect(page.body).not.toContain(`data-request="${req1.id}"`);
    expect(page.body).toContain('$4.00</span> <span class="muted">of <span class="usd">$4.00</span> escrow');

    const rows = await auditOf(ent);
    expect(rows.filter((r) => r.action === 'EscrowFunded' || r.action === 'KeyRequestApproved').map((r) => `${r.action}:${r.actor}`)).toEqual([`EscrowFunded:${alice}`, `KeyRequestApproved:${alice}`]);
    expect(page.body).toContain('KeyRequestApproved');

    // Approving again: 409, readable.
    const again = await post(a.cookie, `/console/enterprise/requests/${req1.id}/approve`, { _csrf: a.csrf });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain('Nothing changed: the key request is already approved');
  });

  it('shows a readable 402 when the enterprise cannot fund the cap, and rejects with a reason', async () => {
    const a = await signIn(alice);
    const poor = await post(a.cookie, `/console/enterprise/requests/${req2.id}/approve`, { _csrf: a.csrf });
    expect(poor.statusCode).toBe(402);
    expect(poor.body).toContain('the enterprise&#39;s available balance cannot fund this key&#39;s spend cap of 900.00 USD');
    expect((await t.gateway.enterprises.request(req2.id)).status).toBe('pending');

    const rejected = await post(a.cookie, `/console/enterprise/requests/${req3.id}/reject`, { _csrf: a.csrf, reason: 'not needed' });
    expect(rejected.statusCode).toBe(303);
    expect(rejected.headers.location).toBe(`/console/enterprise?id=${ent}&done=rejected`);
    expect(await t.gateway.enterprises.request(req3.id)).toMatchObject({ status: 'rejected', decidedBy: alice });
    const again = await post(a.cookie, `/console/enterprise/requests/${req3.id}/reject`, { _csrf: a.csrf });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain('Nothing changed');
  });
});

describe('call-log filter dates', () => {
  it("are days in the time zone the page sends (console.js: the viewer's), UTC without it, and say which", async () => {
    const accountId = await open('Gus');
    const s = await signIn(accountId);
    const utc = await get(s.cookie, '/console/logs?from=2026-07-01&to=2026-07-02');
    expect(utc.statusCode).toBe(200);
    expect(utc.body).toContain('From (date, <span data-tz>UTC</span>)');
    const paris = await get(s.cookie, '/console/logs?from=2026-07-01&to=2026-07-02&tz=Europe%2FParis');
    expect(paris.body).toContain('<input type="hidden" id="f-tz" name="tz" value="Europe/Paris" data-zone>');
    expect(paris.body).toContain('From (date, <span data-tz>Europe/Paris</span>)');
    // The CSV link carries the zone, so the export covers the same days.
    expect(paris.body).toContain('tz=Europe%2FParis');
    const bad = await get(s.cookie, '/console/logs?from=2026-07-01&tz=Mars%2FOlympus');
    expect(bad.body).toContain('tz: is not a time zone');
  });
});

describe('cookies the console did not set', () => {
  // Every console page, each as a browser would reach it.
  const GETS = ['/console', '/console/', '/console/keys', '/console/keys/key_x/reveal', '/console/logs', '/console/logs.csv', '/console/logs/req_x', '/console/knowledge', '/console/enterprise'];
  const POSTS = ['/console/sign-out', '/console/keys', '/console/keys/key_x/reveal', '/console/keys/key_x/revoke', '/console/enterprise/requests/kr_x/approve'];
  const PUBLIC = ['/console/sign-in', '/console/assets/console.css', '/console/assets/console.js'];
  const NASTY = [
    'gateway_console=%E0%A4%A',
    'gateway_console=%',
    'gateway_console=%zz%00',
    `gateway_console=${'a'.repeat(12_000)}`,
    'gateway_console="quoted"',
    'gateway_console=""',
    'gateway_console=',
    'gateway_console=one; gateway_console=%E0%A4%A; gateway_console=two',
    '=%E0%A4%A; ;;; =; gateway_console',
    'other=%E0%A4%A; gateway_console=%C0%AF',
    'gateway_console=a\tb\u007f%0a',
    `${'x=%;'.repeat(2000)}`,
  ];

  it('answer the sign-in page (or the public page asked for), never a 5xx, on every console page', async () => {
    for (const cookie of NASTY) {
      for (const url of GETS) {
        const res = await get(cookie, url);
        expect(res.statusCode, `GET ${url} with ${cookie.slice(0, 60)}`).toBeLessThan(500);
        if (url !== '/console') expect(res.headers.location, `GET ${url} with ${cookie.slice(0, 60)}`).toMatch(/^\/console\/sign-in(\?ended=1)?$/);
      }
      for (const url of POSTS) {
        const res = await post(cookie, url, { _csrf: 'x' });
        expect(res.statusCode, `POST ${url} with ${cookie.slice(0, 60)}`).toBe(401);
        expect(res.body).toContain('Sign in');
      }
      for (const url of PUBLIC) expect((await get(cookie, url)).statusCode, `GET ${url} with ${cookie.slice(0, 60)}`).toBe(200);
      expect((await get(cookie, '/console/no-such-page')).statusCode).toBe(404);
      // Sign-in attempts are limited per address: these come from one of their own.
      const signIn_ = await t.gateway.app.inject({ method: 'POST', url: '/console/sign-in', remoteAddress: `10.31.8.${NASTY.indexOf(cookie)}`, headers: { cookie, ...FORM }, payload: form({ token: 'not-a-code' }) });
      expect(signIn_.statusCode).toBe(400);
    }
  });

  it('leave a good session working beside them', async () => {
    const s = await signIn(await open('Hal'), '10.31.8.100');
    for (const junk of ['other=%E0%A4%A', 'x="%"', '=%', `big=${'%'.repeat(4000)}`]) {
      for (const cookie of [`${junk}; ${s.cookie}`, `${s.cookie}; ${junk}`]) {
        const page = await get(cookie, '/console/keys');
        expect(page.statusCode, cookie.slice(0, 60)).toBe(200);
        expect(page.body).toContain('Hal');
      }
    }
  });

  it('property: any cookie header answers below 500', async () => {
    const octet = fc.mapToConstant({ num: 95, build: (v) => String.fromCharCode(v + 0x20) }, { num: 1, build: () => '\t' });
    const text = fc.string({ unit: fc.oneof(octet, fc.constantFrom('%', ';', '=', '"', 'gateway_console', '%E0%A4', '%A', '%00', '%FF')), maxLength: 80 });
    const header = fc.oneof(text, fc.tuple(text, text, text).map(([before, value, after]) => `${before}; gateway_console=${value}; ${after}`));
    await fc.assert(
      fc.asyncProperty(header, fc.constantFrom('/console/', '/console/keys', '/console/sign-in', '/console/logs/req_x'), async (cookie, url) => {
        const res = await get(cookie, url);
        expect(res.statusCode, `${url} ${JSON.stringify(cookie)}`).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });
});

describe('forms sent from another origin', () => {
  // light-my-request's Host is localhost:80: this gateway's origin is http://localhost.
  const HERE = 'http://localhost';
  const signInFrom = async (headers: Record<string, string>, remoteAddress: string) => {
    const accountId = await open('Ivy');
    const res = await t.gateway.app.inject({ method: 'POST', url: '/console/sign-in', remoteAddress, headers: { ...FORM, ...headers }, payload: form({ token: await linkCode(accountId) }) });
    const sessions = await t.db.sql.query(`SELECT 1 FROM console_sessions WHERE account_id = $1`, [accountId]);
    return { res, sessions: sessions.length };
  };

  it("sign-in refuses a foreign Origin, and a foreign Referer without Origin (login CSRF): 403, no session, no cookie", async () => {
    for (const [i, headers] of ([{ origin: 'https://attacker.example' }, { origin: 'null' }, { origin: 'http://localhost.attacker.example' }, { referer: 'https://attacker.example/page' }, { origin: 'https://attacker.example', referer: `${HERE}/console/sign-in` }] as Record<string, string>[]).entries()) {
      const { res, sessions } = await signInFrom(headers, `10.31.10.${i}`);
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
      expect(res.headers['set-cookie'], JSON.stringify(headers)).toBeUndefined();
      expect(res.body).toContain('another site');
      expect(sessions).toBe(0);
    }
  });

  it('sign-in takes its own origin, and a request with neither Origin nor Referer (not a browser form)', async () => {
    for (const [i, headers] of ([{ origin: HERE }, { referer: `${HERE}/console/sign-in` }, { origin: HERE, referer: `${HERE}/console/sign-in` }, {}] as Record<string, string>[]).entries()) {
      const { res, sessions } = await signInFrom(headers, `10.31.11.${i}`);
      expect(res.statusCode, JSON.stringify(headers)).toBe(303);
      expect(sessions).toBe(1);
    }
  });

  it('every other form refuses a foreign Referer without Origin, as it refuses a foreign Origin, even with the CSRF token', async () => {
    const accountId = await open('Jo');
    const s = await signIn(accountId, '10.31.12.1');
    const newKey = (headers: Record<string, string>, name: string) =>
      t.gateway.app.inject({ method: 'POST', url: '/console/keys', headers: { cookie: s.cookie, ...FORM, ...headers }, payload: form({ _csrf: s.csrf, name, allowed_models: '', expires_at: '', spend_cap_usd: '' }) });
    expect((await newKey({ origin: 'https://attacker.example' }, 'a')).statusCode).toBe(403);
    expect((await newKey({ referer: 'https://attacker.example/' }, 'b')).statusCode).toBe(403);
    expect((await newKey({ referer: `${HERE}/console/keys` }, 'c')).statusCode).toBe(201);
    const names = await t.db.sql.query<{ name: string }>(`SELECT name FROM api_keys WHERE account_id = $1`, [accountId]);
    expect(names.map((r) => r.name)).toEqual(['c']);
  });
});
