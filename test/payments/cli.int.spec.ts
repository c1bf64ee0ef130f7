import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in';

// The operator's payments commands (`gateway payments …`) against a running gateway's admin API.
const run = promisify(execFile);
let stripe: StripeStandIn;
let t: TestGateway;
let url: string;

beforeAll(async () => {
  stripe = await startStripeStandIn();
  t = await startTestGateway({ env: stripe.env() });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
  stripe.webhookUrl = `${url}/webhooks/stripe`;
});
afterAll(async () => {
  await t?.close();
  await stripe?.close();
});

const gateway = async (...args: string[]) => {
  try {
    const { stdout, stderr } = await run('node', ['bin/gateway.mjs', ...args], { env: { ...process.env, GATEWAY_URL: url, ADMIN_TOKEN: 'test-admin-token' }, encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
};

describe('gateway payments', () => {
  it('lists payments as a table or JSON, refunds through Stripe, and lists deliveries set aside', async () => {
    const { accountId, key } = await t.accountWithKey();
    const checkout = await fetch(`${url}/v1/billing/checkout`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"amount_usd":"150"}' });
    const session = ((await checkout.json()) as { id: string }).id;
    await stripe.deliver(stripe.pay(session));
    const foreign = stripe.foreignSessionEvent(20_000);
    await stripe.deliver(foreign);
    await t.gateway.runner.catchUpToHead();

    const table = await gateway('payments', 'list');
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+ACCOUNT_ID\s+AMOUNT_USD\s+STATUS/);
    expect(table.stdout).toMatch(new RegExp(`${session}\\s+${accountId}\\s+150\\.00\\s+paid`));
    const json = JSON.parse((await gateway('payments', 'list', '--account', accountId, '--json')).stdout);
    expect(json.data).toEqual([expect.objectContaining({ id: session, account_id: accountId, status: 'paid' })]);
    expect(JSON.parse((await gateway('payments', 'refund', session, '20')).stdout)).toMatchObject({ payment_id: session, amount_usd: '20.00' });
    expect((await gateway('payments', 'webhooks')).stdout).toMatch(new RegExp(`unmatched\\s+checkout\\.session\\.completed\\s+${(foreign.data.object as { id: string }).id}`));
    const missing = await gateway('payments', 'refund');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing PAYMENT_ID');
  });
});
