/**
 * Issue 34: the console's Billing page in a real browser. A holder signed in through the operator's
 * one-time link tops up: the form (134.8 minimum) → the Stripe stand-in's checkout page (the gateway
 * opened the session with the official SDK) → paid, Stripe's webhook delivered twice → the page shows
 * the credit once. Without Stripe configured, the page says top-ups are the operator's.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in';
import { launchBrowser, screenshot } from './browser';

let stripe: StripeStandIn;
let h: SimulatedGateway;
let plain: SimulatedGateway;
let browser: Browser;

beforeAll(async () => {
  stripe = await startStripeStandIn();
  h = await startSimulatedGateway(chatConfig, { env: stripe.env() });
  plain = await startSimulatedGateway(chatConfig);
  stripe.webhookUrl = `${h.baseUrl}/webhooks/stripe`;
  stripe.deliveries = 2;
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
  await plain?.close();
  await stripe?.close();
});

async function signedIn(gateway: SimulatedGateway, context: BrowserContext): Promise<{ page: Page; accountId: string }> {
  // Over HTTP: the link names the origin the operator's request came to.
  const admin = async (path: string, body: unknown) => {
    const response = await fetch(`${gateway.baseUrl}/admin/v1${path}`, { method: 'POST', headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await response.json()) as Record<string, unknown>;
  };
  const accountId = (await admin('/accounts', { name: 'Billing holder' })).id as string;
  const link = (await admin(`/accounts/${accountId}/login-link`, {})).url as string;
  const page = await context.newPage();
  await page.goto(link);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${gateway.baseUrl}/console/`);
  return { page, accountId };
}

describe('the Billing page', () => {
  it('tops up through Stripe: a webhook delivered twice shows the credit once', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const { page, accountId } = await signedIn(h, context);
    await page.getByRole('link', { name: 'Billing' }).click();
    await page.waitForURL(`${h.baseUrl}/console/billing`);
    await expect.poll(() => page.locator('#balance').textContent()).toBe('$40.44');
    await expect.poll(() => page.getByText('No payments yet.').count()).toBe(1);

    const before = stripe.requests.length;
    await page.getByLabel(/Amount in USD/).fill('134.79');
    await page.getByRole('button', { name: 'Pay with Stripe' }).click();
    await expect.poll(() => page.locator('#topup-error').textContent()).toContain('134.80');
    expect(stripe.requests.length).toBe(before);

    await page.getByLabel(/Amount in USD/).fill('150.00');
    await screenshot(page, 'billing');
    await page.getByRole('button', { name: 'Pay with Stripe' }).click();
    await page.waitForURL(new RegExp(`^${stripe.url}/pay/cs_test_`));
    expect(await page.getByRole('heading').textContent()).toBe('Pay 150.00 USD');
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL(new RegExp(`^${h.baseUrl}/console/billing\\?paid=cs_test_`));

    // The stand-in delivered the webhook twice before sending the payer back.
    await expect
      .poll(async () => {
        await page.reload();
        return page.locator('#balance').textContent();
      })
      .toBe('$190.44');
    await h.t.gateway.runner.catchUpToHead();
    await page.goto(`${h.baseUrl}/console/billing`);
    const rows = page.locator('table tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toMatch(/\$150\.00.*paid/);
    const ledger = (await h.t.admin('GET', `/accounts/${accountId}/ledger`)).json().data.filter((e: { type: string }) => e.type === 'WalletToppedUp');
    expect(ledger).toHaveLength(1);
    await screenshot(page, 'billing-paid');
    await context.close();
  });

  it('without Stripe configured, says top-ups are handled by the operator', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const { page, accountId } = await signedIn(plain, context);
    await page.goto(`${plain.baseUrl}/console/billing`);
    expect(await page.getByText('Top-ups are handled by the operator').count()).toBe(1);
    expect(await page.getByRole('button', { name: /Pay with/ }).count()).toBe(0);
    // Admin top-ups keep working, and show on the page.
    expect((await plain.t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '134.80', reference: 'invoice-1' })).statusCode).toBe(201);
    await page.reload();
    expect(await page.locator('#balance').textContent()).toBe('$175.24');
    await screenshot(page, 'billing-operator');
    await context.close();
  });
});
