/**
 * Issue 33, items 10-12: the console on a 360 px phone in Chromium, on the demo config. The usage
 * chart's labels are readable (their rendered size, not only the CSS value), the y axis has round
 * values, the numbers are also a table, and the Cost column of "Totals by model" is on screen; a
 * refused key form names the field and keeps what was typed; dates are the viewer's (the key's
 * expiry day too); an interrupted call's detail names no operator variable.
 */
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { launchBrowser, screenshot } from './browser';

let h: SimulatedGateway;
let browser: Browser;
beforeAll(async () => {
  h = await startSimulatedGateway((sim) => loadConfig(undefined, { SIMULATOR_URL: sim.url }).config);
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const ZONE = 'Asia/Tokyo';
const PHONE = { viewport: { width: 360, height: 740 }, deviceScaleFactor: 1, timezoneId: ZONE };
/** An operator's environment variable name (`SHUTDOWN_GRACE_S`). */
const ENV_NAME = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/;

async function phone(accountId: string): Promise<{ context: BrowserContext; page: Page }> {
  const link = await h.t.admin('POST', `/accounts/${accountId}/login-link`, {});
  expect(link.statusCode).toBe(201);
  const context = await browser.newContext(PHONE);
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  // The link names the configured public address; this gateway listens on an ephemeral port.
  await page.goto((link.json().url as string).replace(/^https?:\/\/[^/]+/, h.baseUrl));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${h.baseUrl}/console/`);
  return { context, page };
}

async function calls(key: string, models: readonly string[]): Promise<string[]> {
  const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
  const ids: string[] = [];
  for (const [i, model] of models.entries()) {
    const { response } = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: `Question ${i}: ${'tell me more '.repeat(40 * (i + 1))}` }] }).withResponse();
    ids.push(response.headers.get('x-gateway-trace')!);
  }
  // The call log is a projection written just after the answers.
  await expect.poll(async () => (await h.t.db.sql.query(`SELECT 1 FROM call_log WHERE request_id = ANY($1)`, [ids])).length, { timeout: 15_000 }).toBe(ids.length);
  return ids;
}

/** Font sizes as drawn: the CSS size times the SVG's scale on screen. */
const renderedSizes = (page: Page, selector: string) =>
  page.$$eval(selector, (texts) =>
    texts.map((t) => {
      // Runs in the page (the test's TypeScript has no DOM types).
      const svg = (t as unknown as { ownerSVGElement: { getScreenCTM(): { a: number } } }).ownerSVGElement;
      const style = (globalThis as unknown as { getComputedStyle(e: unknown): { fontSize: string } }).getComputedStyle(t);
      const box = (e: unknown) => (e as { getBoundingClientRect(): { left: number; right: number } }).getBoundingClientRect();
      const inside = box(t).left >= box(svg).left - 0.5 && box(t).right <= box(svg).right + 0.5;
      return { text: t.textContent ?? '', px: parseFloat(style.fontSize) * svg.getScreenCTM().a, inside };
    }),
  );

describe('the console on a 360 px phone', () => {
  it('overview: chart labels of at least 10 px, round y values, a table fallback, and the Cost column on screen', async () => {
    const { accountId, key } = await h.t.accountWithKey();
    await calls(key, ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1-mini', 'gpt-4.1-nano', 'o3-mini']);
    const { context, page } = await phone(accountId);
    // console.js has told the server the zone (a cookie): the chart's days are the viewer's.
    await page.reload();

    const labels = await renderedSizes(page, 'svg:visible text.axis');
    expect(labels.length).toBeGreaterThanOrEqual(8);
    for (const label of labels) {
      expect(label.px, `"${label.text}" is drawn at ${label.px.toFixed(1)} px`).toBeGreaterThanOrEqual(10);
      expect(label.inside, `"${label.text}" is cut off`).toBe(true);
    }
    await expect(page.locator('figure.chart').textContent()).resolves.toContain(`Cost per day (${ZONE})`);
    const yLabels = labels.filter((l) => l.text.startsWith('$'));
    expect(yLabels.length).toBeGreaterThanOrEqual(3);
    expect(yLabels.map((l) => l.text)).toContain('$0');
    // The same numbers as a table, for a phone that has no hover tooltips (and for screen readers).
    await page.getByText('The same as a table').click();
    const dayRows = page.locator('.chart-table tbody tr');
    await expect(dayRows.count()).resolves.toBeGreaterThanOrEqual(1);
    await expect(dayRows.first().textContent()).resolves.toContain('gpt-4o-mini $');

    const costHeader = page.locator('#by-model thead th', { hasText: 'Cost' });
    const costCell = page.locator('#by-model tbody tr').first().locator('td').nth(1);
    for (const cell of [costHeader, costCell]) {
      await expect(cell.isVisible()).resolves.toBe(true);
      const box = (await cell.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(360);
    }
    await expect(costCell.textContent()).resolves.toMatch(/^\$\d/);
    await screenshot(page, 'overview-360-usage');

    // On a desktop the wide drawing is shown, its labels readable too.
    await page.setViewportSize({ width: 1280, height: 900 });
    const wide = await renderedSizes(page, 'svg:visible text.axis');
    expect(wide.length).toBeGreaterThanOrEqual(8);
    for (const label of wide) expect(label.px).toBeGreaterThanOrEqual(10);
    await context.close();
  });

  it('a refused key form says which field and why and keeps what was typed; the expiry is a day in the viewer zone', async () => {
    const { accountId } = await h.t.accountWithKey();
    const { context, page } = await phone(accountId);
    await page.goto(`${h.baseUrl}/console/keys`);
    await expect(page.locator('label[for="key-expires"]').textContent()).resolves.toContain(ZONE);
    await expect(page.locator('footer').textContent()).resolves.toContain(`your time zone, ${ZONE}`);
    await page.getByLabel('Name').fill('phone app');
    await page.getByLabel('Allowed models').fill('gpt-4o-mini');
    await page.locator('#key-expires').fill('2031-05-17');
    await page.getByLabel('Spend cap in USD (empty: none)').fill('12,50');
    await page.getByRole('button', { name: 'Create key' }).click();

    const alert = (await page.getByRole('alert').textContent())!;
    expect(alert).toContain('The key was not created');
    expect(alert).toContain('Spend cap');
    expect(alert).toContain('no commas');
    expect(alert).not.toContain('Invalid input');
    await expect(page.locator('#key-cap').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(page.locator('#key-cap-error').isVisible()).resolves.toBe(true);
    expect(await Promise.all(['#key-name', '#key-models', '#key-expires', '#key-cap'].map((id) => page.locator(id).inputValue()))).toEqual([
      'phone app',
      'gpt-4o-mini',
      '2031-05-17',
      '12,50',
    ]);
    await screenshot(page, 'key-form-error-360');

    await page.getByLabel('Spend cap in USD (empty: none)').fill('12.50');
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect(page.locator('#raw-key').textContent()).resolves.toMatch(/^\s*sk-/);
    const keys = (await h.t.admin('GET', `/accounts/${accountId}/keys`)).json().data as Array<{ name: string; expires_at: number | null; spend_cap_usd: string | null }>;
    const created = keys.find((k) => k.name === 'phone app')!;
    // 2031-05-17 begins in Tokyo (UTC+9) at 15:00 UTC the day before.
    expect(created.expires_at).toBe(Date.UTC(2031, 4, 17) / 1000 - 9 * 3600);
    await context.close();
  });

  it("an interrupted call's detail says what happened in the holder's words, with no operator variable", async () => {
    const { accountId, key } = await h.t.accountWithKey();
    const [requestId] = await calls(key, ['gpt-4o-mini']);
    // The row a stream cut by the gateway's shutdown leaves (as rows written before this change read).
    await h.t.db.sql.query(
      `UPDATE call_log SET status = 'interrupted', error_code = 'gateway_shutting_down', error_message = 'the gateway shut down before the stream finished (SHUTDOWN_GRACE_S ran out)' WHERE request_id = $1`,
      [requestId],
    );
    const [row] = await h.t.db.sql.query<{ id: string }>(`SELECT id::text AS id FROM call_log WHERE request_id = $1`, [requestId]);
    const { context, page } = await phone(accountId);
    await page.goto(`${h.baseUrl}/console/logs/${row!.id}`);
    const facts = (await page.locator('#call').textContent())!;
    expect(facts).toContain('interrupted');
    expect(facts).toContain('The gateway was restarting');
    expect(facts).not.toMatch(ENV_NAME);
    expect((await page.locator('main').textContent())!).not.toMatch(ENV_NAME);
    await context.close();
  });
});
