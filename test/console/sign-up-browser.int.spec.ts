/**
 * Issue 34 as a new holder does it in Chromium (playwright-core): sign up → the mail, read from a local
 * SMTP server → the verification link → password sign-in → an API key → a chat call with the openai SDK
 * against the simulator → the overview shows the 40.44 trial grant less the call → a top-up on the Billing
 * page through the Stripe stand-in (the gateway opens the session with the official SDK; the stand-in
 * delivers the signed webhook twice) → the balance shows the credit once. Then the account page and a
 * password reset by its mailed link. CONSOLE_SCREENSHOTS=docs/console saves the pages.
 */
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseUsd } from '../../src/money/usd';
import { chatConfig, expectedCost } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { startLocalSmtp, type LocalSmtp } from '../support/smtp';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in';
import { launchBrowser, screenshot } from './browser';

const REDIS_URL = process.env.REDIS_URL;
let h: SimulatedGateway;
let smtp: LocalSmtp;
let stripe: StripeStandIn;
let browser: Browser;

beforeAll(async () => {
  smtp = await startLocalSmtp();
  stripe = await startStripeStandIn();
  const prefix = `gw:test:signup-browser:${randomBytes(6).toString('hex')}`;
  h = await startSimulatedGateway((sim) => ({ ...chatConfig(sim), signup: { enabled: true, grant_usd: '40.44', require_email_verification: true, per_ip_per_hour: 5, per_email_per_hour: 3 } }), {
    env: { SMTP_URL: smtp.url, ...stripe.env() },
    ...(REDIS_URL ? { redisUrl: REDIS_URL, jobsPrefix: prefix, rateLimits: { redisUrl: REDIS_URL, keyPrefix: `${prefix}:` } } : {}),
  });
  stripe.webhookUrl = `${h.baseUrl}/webhooks/stripe`;
  stripe.deliveries = 2;
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
  await smtp?.close();
  await stripe?.close();
});

describe('a new holder in a browser', () => {
  it('signs up, verifies the address from the mail, signs in with the password, makes a key, calls, sees 40.44 less the call, and tops up once through Stripe', async () => {
    const email = `ada-${randomBytes(4).toString('hex')}@example.test`;
    const password = 'correct horse battery';
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();

    await page.goto(`${h.baseUrl}/console/sign-up`);
    await expect(page.locator('main').textContent()).resolves.toContain('40.44 USD');
    await page.getByLabel('Email address').fill(email);
    await page.getByLabel('Display name').fill('Ada Lovelace');
    await page.getByLabel('Password (at least 10 characters)').fill(password);
    await screenshot(page, 'sign-up');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${h.baseUrl}/console/sign-up/done`);
    await expect(page.getByRole('status').textContent()).resolves.toContain('open its link to confirm the address');
    await screenshot(page, 'sign-up-done');

    // The mail, as the local SMTP server got it; its link's code is in the fragment.
    const mail = await smtp.next(email, /Confirm your email address/);
    await page.goto(mail.link!);
    expect(page.url()).toBe(`${h.baseUrl}/console/verify-email`);
    await screenshot(page, 'verify-email');
    await page.getByRole('button', { name: 'Confirm my address' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toContain('40.44 USD of trial credit is in your wallet');
    await screenshot(page, 'email-verified');

    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('Email address').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await screenshot(page, 'sign-in');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${h.baseUrl}/console/`);
    await expect(page.locator('#available').textContent()).resolves.toBe('$40.44');

    await page.goto(`${h.baseUrl}/console/keys`);
    await page.getByLabel('Name').fill('laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const raw = (await page.locator('#raw-key').textContent())!.trim();
    expect(raw).toMatch(/^sk-/);

    const openai = new OpenAI({ apiKey: raw, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Hello, I just signed up' }] });
    const cost = expectedCost(completion.usage!.prompt_tokens, completion.usage!.prompt_tokens_details?.cached_tokens ?? 0, completion.usage!.completion_tokens);
    expect(cost > 0n).toBe(true);
    const left = `$${formatUsd(parseUsd('40.44') - cost)}`;
    // What the overview shows once the money has moved (a call settles after it has answered, a top-up
    // once Stripe's webhook is in).
    const overviewShows = (amount: string) =>
      expect
        .poll(
          async () => {
            await page.goto(`${h.baseUrl}/console/`);
            return page.locator('#available').textContent();
          },
          { timeout: 15_000, interval: 250 },
        )
        .toBe(amount);
    await overviewShows(left);

    // A paid top-up: Stripe's checkout, then its webhook delivered twice; the wallet is credited once.
    await page.getByRole('link', { name: 'Billing' }).click();
    await page.waitForURL(`${h.baseUrl}/console/billing`);
    await page.getByLabel(/Amount in USD/).fill('150.00');
    await page.getByRole('button', { name: 'Pay with Stripe' }).click();
    await page.waitForURL(new RegExp(`^${stripe.url}/pay/cs_test_`));
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL(new RegExp(`^${h.baseUrl}/console/billing\\?paid=cs_test_`));
    const topped = `$${formatUsd(parseUsd('40.44') - cost + parseUsd('150'))}`;
    await overviewShows(topped);

    await page.getByRole('link', { name: 'Account' }).click();
    await expect(page.locator('main').textContent()).resolves.toContain(email);
    await screenshot(page, 'account');

    // A reset by its mailed link ends this session too.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.goto(`${h.baseUrl}/console/forgot-password`);
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Mail me a link' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toContain('If this address has an account');
    await screenshot(page, 'forgot-password');
    const reset = await smtp.next(email, /Reset your password/);
    await page.goto(reset.link!);
    await page.getByLabel('New password (at least 10 characters)').fill('a brand new password');
    await screenshot(page, 'reset-password');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toContain('Your new password is set');
    await page.getByLabel('Email address').fill(email);
    await page.getByLabel('Password', { exact: true }).fill('a brand new password');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${h.baseUrl}/console/`);
    await expect(page.locator('#available').textContent()).resolves.toBe(topped);
    await context.close();
  });
});
