/**
 * Issue 17: the account holders' console, driven in a real browser (Debian's chromium through
 * playwright-core) against a gateway on the upstream simulator. One browser for the file; each
 * test walks several steps, as a person would.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSV_COLUMNS } from '../../src/projections/call-log/queries';
import { chatConfig, expectedCost } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { formatUsd } from '../../src/money/usd';
import { launchBrowser, screenshot } from './browser';

const REDIS_URL = process.env.REDIS_URL;
let h: SimulatedGateway;
let browser: Browser;
/** Seconds the gateway's clock is ahead of the real one (links and sessions expire on it). */
let ahead = 0;

beforeAll(async () => {
  const prefix = `gw:test:console:${randomBytes(6).toString('hex')}`;
  h = await startSimulatedGateway(chatConfig, {
    now: () => Math.floor(Date.now() / 1000) + ahead,
    ...(REDIS_URL ? { redisUrl: REDIS_URL, jobsPrefix: prefix, rateLimits: { redisUrl: REDIS_URL, keyPrefix: `${prefix}:` } } : {}),
  });
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function admin(method: string, path: string, body?: unknown) {
  const response = await fetch(`${h.baseUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: 'Bearer test-admin-token', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function newAccount(name: string): Promise<string> {
  const account = await admin('POST', '/accounts', { name });
  expect(account.status).toBe(201);
  return account.json.id as string;
}

async function loginLink(accountId: string): Promise<string> {
  const link = await admin('POST', `/accounts/${accountId}/login-link`, {});
  expect(link.status).toBe(201);
  return link.json.url as string;
}

async function signIn(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(url);
  // The code arrives in the fragment, which console.js moves into the form (and out of the address bar).
  expect(page.url()).not.toContain('#');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${h.baseUrl}/console/`);
  return page;
}

const audit = async (accountId: string) =>
  (await h.t.db.sql.query<{ action: string; actor: string | null }>(`SELECT action, actor FROM audit_trail WHERE account_id = $1 ORDER BY at, action`, [accountId])).map((r) => `${r.action}:${r.actor}`);

describe('the console in a browser', () => {
  it('signs in by link, creates a key that works with the openai SDK, finds the call and its receipt, exports CSV, reveals and revokes the key', async () => {
    const accountId = await newAccount('Ada');
    const url = await loginLink(accountId);
    expect(url).toMatch(new RegExp(`^${h.baseUrl}/console/sign-in#[A-Za-z0-9_-]{43}$`));
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    const signInPage = await context.newPage();
    await signInPage.goto(url.replace(/#.*/, ''));
    await screenshot(signInPage, 'sign-in');
    await signInPage.close();

    const page = await signIn(context, url);
    await expect(page.locator('#available').textContent()).resolves.toBe('$40.44');
    // Besides the session, console.js keeps the viewer's time zone in `console_tz` (the chart's days).
    const cookie = (await context.cookies()).find((c) => c.name === 'gateway_console');
    expect(cookie).toMatchObject({ name: 'gateway_console', path: '/console', httpOnly: true, sameSite: 'Lax', secure: false });

    const root = await fetch(`${h.baseUrl}/console`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([303, '/console/']);

    // Security headers on every page: a CSP without inline scripts, never framed.
    const keysResponse = await page.goto(`${h.baseUrl}/console/keys`);
    const headers = keysResponse!.headers();
    expect(headers['content-security-policy']).toContain("script-src 'self'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(headers['x-frame-options']).toBe('DENY');
    expect(await page.locator('script:not([src])').count()).toBe(0);
    const missing = await page.goto(`${h.baseUrl}/console/no-such-page`);
    expect(missing!.status()).toBe(404);
    expect(missing!.headers()['x-frame-options']).toBe('DENY');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('no such page');
    await page.goto(`${h.baseUrl}/console/keys`);

    // Create a key: its raw form is shown once.
    await page.getByLabel('Name').fill('laptop');
    await page.getByLabel('Spend cap in USD (empty: none)').fill('5');
    await page.getByRole('button', { name: 'Create key' }).click();
    const raw = (await page.locator('#raw-key').textContent())!.trim();
    expect(raw).toMatch(/^sk-/);
    await page.goto(`${h.baseUrl}/console/keys`);
    expect(await page.content()).not.toContain(raw);
    await expect(page.locator('#keys tbody tr').count()).resolves.toBe(1);
    await screenshot(page, 'keys');

    // The key calls a model through the openai SDK.
    const openai = new OpenAI({ apiKey: raw, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const { data: completion, response } = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Hello from the console test' }] }).withResponse();
    const requestId = response.headers.get('x-gateway-trace')!;
    expect(requestId).toMatch(/^req_/);
    const cost = formatUsd(expectedCost(completion.usage!.prompt_tokens, completion.usage!.prompt_tokens_details?.cached_tokens ?? 0, completion.usage!.completion_tokens));

    // The call is in the log, found by its request id, and its detail explains the charge.
    // The call log is a projection, written after the answer (a chat call settles once it has answered):
    // on a loaded machine its row may take a moment, so the page is filtered again until it shows.
    await expect
      .poll(
        async () => {
          await page.goto(`${h.baseUrl}/console/logs`);
          await page.getByLabel('Request id (x-gateway-trace)').fill(requestId);
          await page.getByRole('button', { name: 'Filter' }).click();
          return page.locator('#log tbody tr').count();
        },
        { timeout: 15_000, interval: 250 },
      )
      .toBe(1);
    await screenshot(page, 'logs');
    await page.getByRole('link', { name: `Details of ${requestId}` }).click();
    await expect(page.locator('h1').textContent()).resolves.toBe(`Call ${requestId}`);
    expect(await page.locator('#charged').textContent()).toBe(`$${cost}`);
    const ledgerRows = await page.locator('#ledger tbody tr td:nth-child(3)').allTextContents();
    expect(ledgerRows.map((t) => t.trim())).toEqual(['hold', 'settlement (capture)']);
    expect(await page.locator('#receipt').textContent()).toContain('Output');
    await screenshot(page, 'call');

    // A filter that is not one says so, and what to do.
    await page.goto(`${h.baseUrl}/console/logs?from=2026-13-45&cursor=${'9'.repeat(30)}:x`);
    await expect(page.getByRole('alert').textContent()).resolves.toContain('from: is not a date');

    // CSV export of the filtered log: the spec's columns, the one call.
    await page.goto(`${h.baseUrl}/console/logs?request_id=${requestId}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#csv').click()]);
    const csv = readFileSync((await download.path())!, 'utf8').trim().split('\n');
    expect(csv[0]).toBe(CSV_COLUMNS.join(','));
    expect(csv).toHaveLength(2);
    expect(csv[1]).toContain(requestId);
    expect(csv[1]).toContain(cost);

    // The overview shows the spend, the chart and the last call.
    await page.goto(`${h.baseUrl}/console/`);
    expect(await page.locator('figure.chart svg rect').count()).toBeGreaterThan(0);
    await expect(page.locator('#log tbody tr').count()).resolves.toBe(1);
    await screenshot(page, 'overview');
    // Knowledge: the bases with their page counts, and a search preview.
    const put = await admin('PUT', `/accounts/${accountId}/kbs/default/pages/refunds`, { title: 'Refund policy', summary: 'How refunds work', body: 'A refund goes back to the wallet within a day.' });
    expect(put.status).toBe(201);
    await page.goto(`${h.baseUrl}/console/knowledge`);
    await expect(page.locator('#kbs tbody tr td:nth-child(4)').allTextContents()).resolves.toEqual(['1']);
    await page.getByLabel('Search text').fill('refund wallet');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/[?&]q=refund/);
    await expect(page.locator('main ol li strong').allTextContents()).resolves.toEqual(['Refund policy']);
    await screenshot(page, 'knowledge');

    // Reveal again, with a confirmation; recorded in the audit trail.
    await page.goto(`${h.baseUrl}/console/keys`);
    await page.getByRole('link', { name: 'Reveal' }).click();
    await page.getByRole('button', { name: 'Reveal the key' }).click();
    expect((await page.locator('#raw-key').textContent())!.trim()).toBe(raw);

    // A form without the session's CSRF token (or from another origin) changes nothing.
    const noToken = await page.request.post(`${h.baseUrl}/console/keys`, { form: { name: 'forged' } });
    expect(noToken.status()).toBe(403);
    const wrongToken = await page.request.post(`${h.baseUrl}/console/keys`, { form: { name: 'forged', _csrf: 'x'.repeat(43) } });
    expect(wrongToken.status()).toBe(403);
    const csrf = await page.locator('input[name=_csrf]').first().getAttribute('value');
    const crossOrigin = await page.request.post(`${h.baseUrl}/console/keys`, { form: { name: 'forged', _csrf: csrf! }, headers: { origin: 'https://evil.example' } });
    expect(crossOrigin.status()).toBe(403);
    await page.goto(`${h.baseUrl}/console/keys`);
    await expect(page.locator('#keys tbody tr').count()).resolves.toBe(1);

    // Disable and enable again.
    await page.getByRole('button', { name: 'Disable' }).click();
    await expect(page.locator('#keys tbody tr td:nth-child(3)').textContent()).resolves.toBe('disabled');
    await page.getByRole('button', { name: 'Enable' }).click();
    await expect(page.locator('#keys tbody tr td:nth-child(3)').textContent()).resolves.toBe('active');

    // Revoke (after the confirmation dialog): the next call is refused with 401.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toContain('revoked');
    const refused = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'again' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(401);

    await expect(page.locator('#keys tbody tr td:nth-child(3)').textContent()).resolves.toBe('revoked');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No keys yet').waitFor();

    // Sign out: the session is over on the server, not only in this browser.
    const sessionCookie = (await context.cookies()).find((c) => c.name === 'gateway_console')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page.locator('h1').textContent()).resolves.toBe('Signed out');
    const replayed = await fetch(`${h.baseUrl}/console/keys`, { headers: { cookie: `${sessionCookie.name}=${sessionCookie.value}` }, redirect: 'manual' });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get('location')).toBe('/console/sign-in?ended=1');

    await h.t.gateway.runner.waitFor(await h.t.gateway.storage.store.headPosition());
    // Every console action names its session, as its sign-in does.
    const [signedIn] = await h.t.db.sql.query<{ session: string }>(`SELECT details->>'session' AS session FROM audit_trail WHERE account_id = $1 AND action = 'ConsoleSignedIn'`, [accountId]);
    const actor = `console:${signedIn!.session}`;
    expect(await audit(accountId)).toEqual(
      expect.arrayContaining(['ConsoleLinkIssued:admin', ...['ConsoleSignedIn', 'KeyIssued', 'KeyRevealed', 'KeyUpdated', 'KeyRevoked', 'KeyDeleted', 'ConsoleSignedOut'].map((action) => `${action}:${actor}`)]),
    );
    await context.close();
  });

  it('refuses a used link, an expired link and an expired session; rate-limits sign-in attempts', async () => {
    const accountId = await newAccount('Grace');
    const context = await browser.newContext({ viewport: { width: 360, height: 780 } });
    context.setDefaultTimeout(10_000);

    // A link works once.
    const url = await loginLink(accountId);
    const page = await signIn(context, url);
    await screenshot(page, 'overview-360');
    let again = await context.newPage();
    await again.goto(url);
    const used = again.waitForResponse((r) => r.url().endsWith('/console/sign-in') && r.request().method() === 'POST');
    await again.getByRole('button', { name: 'Sign in' }).click();
    expect((await used).status()).toBe(410);
    await expect(again.getByRole('alert').textContent()).resolves.toContain('used already');

    // A link is good for 15 minutes.
    const late = await loginLink(accountId);
    ahead += 15 * 60 + 1;
    await again.close();
    again = await context.newPage();
    await again.goto(late);
    await again.getByRole('button', { name: 'Sign in' }).click();
    await expect(again.getByRole('alert').textContent()).resolves.toContain('expired');

    // A session ends after 8 hours: the next page asks to sign in again.
    ahead += 8 * 3600;
    await page.goto(`${h.baseUrl}/console/keys`);
    expect(page.url()).toBe(`${h.baseUrl}/console/sign-in?ended=1`);
    await expect(page.getByRole('status').textContent()).resolves.toContain('session has ended');
    expect((await context.cookies()).filter((c) => c.name === 'gateway_console')).toEqual([]);

    // Sign-in attempts per address are limited: 10 per 15 minutes (the clock moved past the last window).
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await again.request.post(`${h.baseUrl}/console/sign-in`, { form: { token: `guess-${i}` } })).status());
    expect(statuses).toEqual([...new Array(10).fill(400), 429, 429]);

    // No link for an unknown or an inactive account.
    expect((await admin('POST', '/accounts/acct_nobody/login-link', {})).status).toBe(404);
    expect((await admin('POST', `/accounts/${accountId}/deactivate`, {})).status).toBe(200);
    expect(await admin('POST', `/accounts/${accountId}/login-link`, {})).toMatchObject({ status: 409, json: { error: { code: 'account_inactive' } } });
    await context.close();
  });
});
