/**
 * Issue 34, part A: a holder's own account. Sign-up (the JSON endpoint and the console's form) opens the
 * account with no credit; the spec's 40.44 trial grant comes once the address is verified by the mailed
 * link (read from a local SMTP server), and never twice. Password sign-in, its limits, reset by an emailed
 * link (single use, 30 minutes), change, sign out everywhere; abuse refused with nothing granted; an
 * address in use answered like a new one; the operator's list and switch. No secret in the audit trail or
 * the log. On PGlite, or on Postgres and Redis when DATABASE_URL / REDIS_URL are set.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { startLocalSmtp, type LocalSmtp } from '../support/smtp';

const REDIS_URL = process.env.REDIS_URL;
const dir = mkdtempSync(join(tmpdir(), 'sign-up-'));
const CONFIG_FILE = join(dir, 'gateway.json');
let h: SimulatedGateway;
let smtp: LocalSmtp;
let made: GatewayConfig;
/** Seconds the gateway's clock is ahead of the real one (links expire on it). */
let ahead = 0;
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  smtp = await startLocalSmtp();
  const prefix = `gw:test:signup:${randomBytes(6).toString('hex')}`;
  h = await startSimulatedGateway(
    (sim) => {
      made = { ...chatConfig(sim), signup: { enabled: true, grant_usd: '40.44', require_email_verification: true, per_ip_per_hour: 5, per_email_per_hour: 3 } };
      writeFileSync(CONFIG_FILE, JSON.stringify(made));
      return made;
    },
    {
      now: () => Math.floor(Date.now() / 1000) + ahead,
      env: { SMTP_URL: smtp.url, MAIL_FROM: 'Gateway <gateway@example.test>', GATEWAY_CONFIG: CONFIG_FILE },
      ...(REDIS_URL ? { redisUrl: REDIS_URL, jobsPrefix: prefix, rateLimits: { redisUrl: REDIS_URL, keyPrefix: `${prefix}:` } } : {}),
    },
  );
}, 120_000);
afterAll(async () => {
  await h?.close();
  await smtp?.close();
  rmSync(dir, { recursive: true, force: true });
});

let nextIp = 1;
/** A client address of its own per test, so that the per-address limits of one do not reach another. */
const newIp = () => `10.0.${Math.floor(nextIp / 250)}.${(nextIp++ % 250) + 1}`;
const unique = (name: string) => `${name}-${randomBytes(4).toString('hex')}@example.test`;

const inject = (options: InjectOptions) => h.t.gateway.app.inject(options);
const signUpJson = (body: Record<string, unknown>, ip: string) => inject({ method: 'POST', url: '/v1/accounts/sign-up', payload: body, remoteAddress: ip });
function form(url: string, fields: Record<string, string>, ip: string, cookie?: string) {
  return inject({
    method: 'POST',
    url,
    payload: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    remoteAddress: ip,
  });
}
const cookieOf = (response: LightMyRequestResponse) => {
  const set = [response.headers['set-cookie']].flat().find((c) => c?.startsWith('gateway_console='));
  return set ? set.split(';')[0]! : '';
};
const csrfOf = (pageHtml: string) => /name="_csrf" value="([^"]+)"/.exec(pageHtml)![1]!;
const codeOf = (link: string) => link.slice(link.indexOf('#') + 1);

async function signUps(): Promise<{ account_id: string; email: string; verified_at: number | null; trial_granted: boolean; name: string }[]> {
  const res = await h.t.admin('GET', '/signups?limit=500');
  expect(res.statusCode).toBe(200);
  return res.json().data;
}
const accountOf = async (email: string) => (await signUps()).find((s) => s.email === email)!;
const balanceOf = async (accountId: string) => (await h.t.admin('GET', `/accounts/${accountId}`)).json().balance_usd as string;
const audit = async (accountId: string) =>
  h.t.db.sql.query<{ action: string; details: Record<string, unknown> }>(`SELECT action, details FROM audit_trail WHERE account_id = $1 ORDER BY log_commit, log_prepare`, [accountId]);
const settle = async () => h.t.gateway.runner.waitFor(await h.t.gateway.storage.store.headPosition());

/** Signs up by JSON and verifies the mailed link; the account's id. */
async function verifiedAccount(email: string, ip = newIp()): Promise<string> {
  expect((await signUpJson({ email, password: PASSWORD, name: 'Ada' }, ip)).statusCode).toBe(200);
  const mail = await smtp.next(email, /Confirm/);
  expect((await form('/console/verify-email', { token: codeOf(mail.link!) }, ip)).statusCode).toBe(200);
  return (await accountOf(email)).account_id;
}

describe('sign-up, verification and the trial grant', () => {
  it('opens the account with nothing, mails a link, and grants 40.44 once the address is verified, never twice', async () => {
    const email = unique('ada');
    const ip = newIp();
    const res = await signUpJson({ email, password: PASSWORD, name: 'Ada Lovelace' }, ip);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'accepted', message: expect.stringContaining('mail is on its way') });
    const mail = await smtp.next(email, /Confirm your email address/);
    expect(mail.from).toContain('gateway@example.test');
    expect(mail.text).toContain('40.44 USD of trial credit');
    expect(mail.link).toMatch(/\/console\/verify-email#[A-Za-z0-9_-]{43}$/);

    // Unverified: no grant, no sign-in.
    const before = await accountOf(email);
    expect(before).toMatchObject({ name: 'Ada Lovelace', verified_at: null, trial_granted: false });
    expect(await balanceOf(before.account_id)).toBe('0.00');
    const early = await form('/console/sign-in/password', { email, password: PASSWORD }, ip);
    expect(early.statusCode).toBe(403);
    expect(early.body).toContain('Confirm your email address first');

    const verified = await form('/console/verify-email', { token: codeOf(mail.link!) }, ip);
    expect(verified.statusCode).toBe(200);
    expect(verified.body).toContain('40.44');
    expect(await balanceOf(before.account_id)).toBe('40.44');
    const again = await form('/console/verify-email', { token: codeOf(mail.link!) }, ip);
    expect(again.statusCode).toBe(410);
    expect(await balanceOf(before.account_id)).toBe('40.44');
    expect(await accountOf(email)).toMatchObject({ trial_granted: true, verified_at: expect.any(Number) });
    const ledger = (await h.t.admin('GET', `/accounts/${before.account_id}/ledger`)).json();
    expect(JSON.stringify(ledger).match(/signup-acct_/g)?.length).toBe(1);

    const signedIn = await form('/console/sign-in/password', { email: email.toUpperCase(), password: PASSWORD }, ip);
    expect(signedIn.statusCode).toBe(303);
    expect(signedIn.headers.location).toBe('/console/');
    const overview = await inject({ method: 'GET', url: '/console/', headers: { cookie: cookieOf(signedIn) } });
    expect(overview.statusCode).toBe(200);
    expect(overview.body).toContain('40.44');

    await settle();
    const trail = await audit(before.account_id);
    expect(trail.map((r) => r.action)).toEqual(
      expect.arrayContaining(['AccountSignedUp', 'AccountMailSent', 'ConsoleSignInRefused', 'AccountEmailVerified', 'ConsolePasswordSignedIn']),
    );
    const said = JSON.stringify(trail) + h.t.logs.join('');
    expect(said).not.toContain(PASSWORD);
    expect(said).not.toContain(codeOf(mail.link!));
    expect(said).not.toContain('scrypt$');
  });

  it('answers an address in use exactly like a new one, opens nothing, and tells its owner by mail', async () => {
    const email = unique('grace');
    const accountId = await verifiedAccount(email);
    const count = (await signUps()).length;
    const fresh = await signUpJson({ email: unique('other'), password: PASSWORD, name: 'Other' }, newIp());
    const taken = await signUpJson({ email, password: 'another password', name: 'Mallory' }, newIp());
    expect(taken.statusCode).toBe(fresh.statusCode);
    expect(taken.body).toBe(fresh.body);
    const notice = await smtp.next(email, /Someone tried to sign up/);
    expect(notice.text).toContain('/console/forgot-password');
    expect((await signUps()).length).toBe(count + 1);
    // The console's form answers both alike too.
    const byForm = await form('/console/sign-up', { email, password: PASSWORD, name: 'Again' }, newIp());
    expect(byForm.statusCode).toBe(303);
    expect(byForm.headers.location).toBe('/console/sign-up/done');
    expect(await balanceOf(accountId)).toBe('40.44');
  });

  it('refuses a sign-up beyond the per-address and per-email limits, with nothing opened or granted', async () => {
    const ip = newIp();
    for (let i = 0; i < 5; i++) expect((await signUpJson({ email: unique(`farm${i}`), password: PASSWORD, name: 'Farm' }, ip)).statusCode).toBe(200);
    const count = (await signUps()).length;
    const over = await signUpJson({ email: unique('farm5'), password: PASSWORD, name: 'Farm' }, ip);
    expect(over.statusCode).toBe(429);
    expect(over.headers['retry-after']).toMatch(/^\d+$/);
    expect(over.json().error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error', message: expect.stringContaining('Too many sign-ups from your address') });
    const overForm = await form('/console/sign-up', { email: unique('farm6'), password: PASSWORD, name: 'Farm' }, ip);
    expect(overForm.statusCode).toBe(429);
    expect(overForm.body).toContain('Too many sign-ups from your address');

    const email = unique('same');
    for (let i = 0; i < 3; i++) expect((await signUpJson({ email, password: PASSWORD, name: 'Same' }, newIp())).statusCode).toBe(200);
    const sameOver = await signUpJson({ email, password: PASSWORD, name: 'Same' }, newIp());
    expect(sameOver.statusCode).toBe(429);
    expect(sameOver.json().error.message).toContain('with this email address');
    expect((await signUps()).length).toBe(count + 1);
    for (const s of await signUps()) if (s.verified_at === null) expect(s.trial_granted).toBe(false);
  });

  it('refuses bad fields with the field named', async () => {
    const bad = await signUpJson({ email: 'not-an-address', password: PASSWORD, name: 'X' }, newIp());
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('email') });
    expect((await signUpJson({ email: unique('x'), password: 'short', name: 'X' }, newIp())).json().error.message).toContain('password');
    const page = await form('/console/sign-up', { email: unique('x'), password: 'short', name: 'Kept name' }, newIp());
    expect(page.statusCode).toBe(400);
    expect(page.body).toContain('at least 10 characters');
    expect(page.body).toContain('value="Kept name"');
  });
});

describe('password sign-in, reset and sessions', () => {
  it('limits wrong passwords per account: past 5, even the right one waits', async () => {
    const email = unique('lim');
    await verifiedAccount(email);
    for (let i = 0; i < 5; i++) expect((await form('/console/sign-in/password', { email, password: `wrong password ${i}` }, newIp())).statusCode).toBe(401);
    const locked = await form('/console/sign-in/password', { email, password: PASSWORD }, newIp());
    expect(locked.statusCode).toBe(429);
    expect(locked.body).toContain('Too many sign-in attempts');
    expect(cookieOf(locked)).toBe('');
    // An unknown address is answered like a wrong password.
    const unknown = await form('/console/sign-in/password', { email: unique('nobody'), password: PASSWORD }, newIp());
    expect(unknown.statusCode).toBe(401);
    expect(unknown.body).toContain('The email address or the password is wrong');
  });

  it('limits attempts per client address', async () => {
    const ip = newIp();
    for (let i = 0; i < 20; i++) expect((await form('/console/sign-in/password', { email: unique('n'), password: PASSWORD }, ip)).statusCode).toBe(401);
    expect((await form('/console/sign-in/password', { email: unique('n'), password: PASSWORD }, ip)).statusCode).toBe(429);
  });

  it('resets by an emailed link that works once and for 30 minutes, ending every session', async () => {
    const email = unique('reset');
    const accountId = await verifiedAccount(email);
    const session = cookieOf(await form('/console/sign-in/password', { email, password: PASSWORD }, newIp()));
    expect((await inject({ method: 'GET', url: '/console/', headers: { cookie: session } })).statusCode).toBe(200);

    const unknownAsked = await form('/console/forgot-password', { email: unique('nobody') }, newIp());
    const asked = await form('/console/forgot-password', { email }, newIp());
    expect(asked.statusCode).toBe(200);
    expect(asked.body).toBe(unknownAsked.body);
    const mail = await smtp.next(email, /Reset your password/);
    expect(mail.link).toMatch(/\/console\/reset-password#[A-Za-z0-9_-]{43}$/);
    const reset = await form('/console/reset-password', { token: codeOf(mail.link!), password: 'a brand new password' }, newIp());
    expect(reset.statusCode).toBe(200);
    expect(reset.body).toContain('every session of your account has ended');
    expect((await inject({ method: 'GET', url: '/console/', headers: { cookie: session } })).statusCode).toBe(303);
    const reused = await form('/console/reset-password', { token: codeOf(mail.link!), password: 'yet another password' }, newIp());
    expect(reused.statusCode).toBe(410);
    expect(reused.body).toContain('used already');
    expect((await form('/console/sign-in/password', { email, password: PASSWORD }, newIp())).statusCode).toBe(401);
    expect((await form('/console/sign-in/password', { email, password: 'a brand new password' }, newIp())).statusCode).toBe(303);

    await form('/console/forgot-password', { email }, newIp());
    const late = await smtp.next(email, /Reset your password/);
    ahead += 31 * 60;
    try {
      const expired = await form('/console/reset-password', { token: codeOf(late.link!), password: 'too late a password' }, newIp());
      expect(expired.statusCode).toBe(410);
      expect(expired.body).toContain('expired');
    } finally {
      ahead -= 31 * 60;
    }
    expect((await form('/console/sign-in/password', { email, password: 'a brand new password' }, newIp())).statusCode).toBe(303);

    await settle();
    const trail = await audit(accountId);
    const actions = trail.map((r) => r.action);
    expect(actions).toEqual(expect.arrayContaining(['PasswordResetRequested', 'PasswordChanged', 'ConsoleSessionEnded']));
    expect(trail.find((r) => r.action === 'ConsoleSessionEnded')!.details).toMatchObject({ reason: 'password_changed' });
    expect(JSON.stringify(trail)).not.toContain(codeOf(mail.link!));
    expect(JSON.stringify(trail)).not.toContain('a brand new password');
  });

  it('ends every session on a password change and on sign out everywhere', async () => {
    const email = unique('change');
    await verifiedAccount(email);
    const signIn = async (password: string) => cookieOf(await form('/console/sign-in/password', { email, password }, newIp()));
    const [one, two] = [await signIn(PASSWORD), await signIn(PASSWORD)];
    const account = await inject({ method: 'GET', url: '/console/account', headers: { cookie: one } });
    expect(account.statusCode).toBe(200);
    expect(account.body).toContain(email);
    const wrong = await form('/console/account/password', { _csrf: csrfOf(account.body), current: 'not the password', password: 'changed password 1' }, newIp(), one);
    expect(wrong.statusCode).toBe(400);
    const changed = await form('/console/account/password', { _csrf: csrfOf(account.body), current: PASSWORD, password: 'changed password 1' }, newIp(), one);
    expect(changed.statusCode).toBe(200);
    for (const cookie of [one, two]) expect((await inject({ method: 'GET', url: '/console/', headers: { cookie } })).statusCode).toBe(303);

    const [three, four] = [await signIn('changed password 1'), await signIn('changed password 1')];
    const page = await inject({ method: 'GET', url: '/console/account', headers: { cookie: three } });
    const out = await form('/console/sign-out-everywhere', { _csrf: csrfOf(page.body) }, newIp(), three);
    expect(out.statusCode).toBe(200);
    expect(out.body).toContain('All 2 sessions');
    for (const cookie of [three, four]) expect((await inject({ method: 'GET', url: '/console/', headers: { cookie } })).statusCode).toBe(303);
  });
});

describe('a change of address', () => {
  it('asks the password, mails the new address, and changes it only when its link is opened', async () => {
    const email = unique('move');
    const accountId = await verifiedAccount(email);
    const session = cookieOf(await form('/console/sign-in/password', { email, password: PASSWORD }, newIp()));
    const page = await inject({ method: 'GET', url: '/console/account', headers: { cookie: session } });
    const to = unique('moved');
    const wrong = await form('/console/account/email', { _csrf: csrfOf(page.body), email: to, current: 'not the password' }, newIp(), session);
    expect(wrong.statusCode).toBe(400);
    const asked = await form('/console/account/email', { _csrf: csrfOf(page.body), email: to, current: PASSWORD }, newIp(), session);
    expect(asked.statusCode).toBe(200);
    expect(asked.body).toContain(`Until then you sign in with ${email}`);
    const mail = await smtp.next(to, /Confirm your new email address/);
    expect((await form('/console/sign-in/password', { email: to, password: PASSWORD }, newIp())).statusCode).toBe(401);
    const confirmed = await form('/console/confirm-email', { token: codeOf(mail.link!) }, newIp());
    expect(confirmed.statusCode).toBe(200);
    expect((await form('/console/confirm-email', { token: codeOf(mail.link!) }, newIp())).statusCode).toBe(410);
    expect((await form('/console/sign-in/password', { email: to, password: PASSWORD }, newIp())).statusCode).toBe(303);
    expect((await form('/console/sign-in/password', { email, password: PASSWORD }, newIp())).statusCode).toBe(401);
    expect((await accountOf(to)).account_id).toBe(accountId);
    await settle();
    const changed = (await audit(accountId)).find((r) => r.action === 'AccountEmailChanged');
    expect(changed?.details).toMatchObject({ from: email, to });
  });
});

describe("the operator's side", () => {
  it('keeps granting 40.44 at once to accounts the admin API opens', async () => {
    const { accountId } = await h.t.accountWithKey();
    expect(await balanceOf(accountId)).toBe('40.44');
  });

  it('grants at sign-up and lets the holder sign in at once when the config does not require verification', async () => {
    writeFileSync(CONFIG_FILE, JSON.stringify({ ...made, signup: { ...made.signup, require_email_verification: false } }));
    expect((await h.t.admin('POST', '/config/reload')).statusCode).toBe(200);
    try {
      const email = unique('trusted');
      const res = await signUpJson({ email, password: PASSWORD, name: 'Trusted' }, newIp());
      expect(res.json().message).toContain('your account is open');
      const account = await accountOf(email);
      expect(account).toMatchObject({ verified_at: null, trial_granted: true });
      expect(await balanceOf(account.account_id)).toBe('40.44');
      expect((await form('/console/sign-in/password', { email, password: PASSWORD }, newIp())).statusCode).toBe(303);
      expect(smtp.mails.some((m) => m.to.includes(email))).toBe(false);
    } finally {
      writeFileSync(CONFIG_FILE, JSON.stringify(made));
      expect((await h.t.admin('POST', '/config/reload')).statusCode).toBe(200);
    }
  });

  it('switches sign-up off by a config reload: the page and the endpoint say so, nothing is opened', async () => {
    const count = (await signUps()).length;
    writeFileSync(CONFIG_FILE, JSON.stringify({ ...made, signup: { ...made.signup, enabled: false } }));
    expect((await h.t.admin('POST', '/config/reload')).statusCode).toBe(200);
    try {
      const off = await signUpJson({ email: unique('off'), password: PASSWORD, name: 'Off' }, newIp());
      expect(off.statusCode).toBe(404);
      expect(off.json().error).toMatchObject({ code: 'not_found', message: expect.stringContaining('switched off') });
      expect((await inject({ method: 'GET', url: '/console/sign-up' })).statusCode).toBe(404);
      expect((await form('/console/sign-up', { email: unique('off'), password: PASSWORD, name: 'Off' }, newIp())).statusCode).toBe(404);
      expect((await signUps()).length).toBe(count);
    } finally {
      writeFileSync(CONFIG_FILE, JSON.stringify(made));
      expect((await h.t.admin('POST', '/config/reload')).statusCode).toBe(200);
    }
  });
});
