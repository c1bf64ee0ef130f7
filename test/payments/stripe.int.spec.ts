import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyLedger } from '../../src/projections/verify';
import { startSimulator, type Simulator } from '../../src/simulator';
import { chatConfig } from '../chat/support';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in';
import { testDatabase, type TestDatabase } from '../support/storage';

/** Paid top-ups through Stripe (issue 34), the gateway driving the stand-in with the official SDK. Two gateway
 * instances share the database on Postgres; in embedded mode PGlite belongs to one process, so one. */
let stripe: StripeStandIn;
let sim: Simulator;
let db: TestDatabase;
const instances: TestGateway[] = [];
const urls: string[] = [];

beforeAll(async () => {
  stripe = await startStripeStandIn();
  sim = await startSimulator();
  db = await testDatabase();
  const count = db.label === 'postgres' ? 2 : 1;
  for (let i = 0; i < count; i++) {
    const t = await startTestGateway({ config: chatConfig(sim), env: stripe.env(), db: i === 0 ? db : { ...db, sql: db.another() } });
    await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
    instances.push(t);
    urls.push(`http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`);
  }
  stripe.webhookUrl = `${urls[0]}/webhooks/stripe`;
});
afterAll(async () => {
  for (const t of instances) await t.close();
  await db.drop();
  await sim.close();
  await stripe.close();
});

const t = () => instances[0]!;
const api = (key: string, method: string, path: string, body?: unknown, header: 'bearer' | 'x-api-key' = 'bearer') =>
  fetch(`${urls[0]}${path}`, {
    method,
    headers: { ...(header === 'bearer' ? { authorization: `Bearer ${key}` } : { 'x-api-key': key }), ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = async (response: Response): Promise<any> => response.json();
const balance = async (accountId: string) => (await t().admin('GET', `/accounts/${accountId}`)).json().balance_usd as string;
const walletEvents = async (accountId: string, type: string) =>
  (await t().admin('GET', `/accounts/${accountId}/ledger`)).json().data.filter((e: { type: string }) => e.type === type);

async function paidTopUp(amount = '150.00') {
  const account = await t().accountWithKey();
  const opened = await api(account.key, 'POST', '/v1/billing/checkout', { amount_usd: amount });
  expect(opened.status).toBe(201);
  const session = await json(opened);
  const event = stripe.pay(session.id);
  const paymentIntent = stripe.sessions.get(session.id)!.payment_intent as string;
  return { ...account, session, event, paymentIntent };
}

describe('paid top-ups through Stripe', () => {
  it('opens a checkout session for the account in US cents, and lists it as open', async () => {
    const { accountId, key } = await t().accountWithKey();
    const before = stripe.requests.length;
    const response = await api(key, 'POST', '/v1/billing/checkout', { amount_usd: '150.00' }, 'x-api-key');
    expect(response.status).toBe(201);
    const body = await json(response);
    expect(body).toEqual({ id: expect.stringMatching(/^cs_test_/), url: `${stripe.url}/pay/${body.id}`, amount_usd: '150.00', status: 'open' });
    const sent = stripe.requests.slice(before);
    expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/checkout/sessions']);
    expect(sent[0]!.form.get('mode')).toBe('payment');
    expect(sent[0]!.form.get('client_reference_id')).toBe(accountId);
    expect(sent[0]!.form.get('line_items[0][price_data][unit_amount]')).toBe('15000');
    const list = await json(await api(key, 'GET', '/v1/billing/payments'));
    expect(list.data).toEqual([expect.objectContaining({ id: body.id, amount_usd: '150.00', status: 'open' })]);
  });

  it('refuses an amount below 134.8 with 400 invalid_request and sends nothing to Stripe', async () => {
    const { key } = await t().accountWithKey();
    const before = stripe.requests.length;
    for (const amount_usd of ['134.79', '10', '1.005', 'abc']) {
      const response = await api(key, 'POST', '/v1/billing/checkout', { amount_usd });
      expect(response.status).toBe(400);
      expect((await json(response)).error.code).toBe('invalid_request');
    }
    expect(stripe.requests.length).toBe(before);
    expect((await api(key, 'POST', '/v1/billing/checkout', { amount_usd: '134.80' })).status).toBe(201);
  });

  it('refuses agent keys with 403, as elsewhere', async () => {
    const enterprise = (await t().admin('POST', '/accounts', { name: 'enterprise' })).json().id as string;
    const boss = (await t().admin('POST', '/accounts', { name: 'boss' })).json().id as string;
    await t().admin('PUT', `/accounts/${enterprise}/enterprise`, { allowed_models: ['chat-model'], default_model: 'chat-model' });
    await t().admin('PUT', `/accounts/${enterprise}/members/${boss}`, { role: 'admin' });
    const agent = (await t().admin('POST', `/accounts/${enterprise}/agents`, { name: 'helper', system_prompt: 'Be brief.', creator_account_id: boss })).json().id as string;
    const agentKey = (await t().admin('POST', `/agents/${agent}/keys`, { name: 'agent key', issued_by: boss })).json().key as string;
    const before = stripe.requests.length;
    expect((await api(agentKey, 'POST', '/v1/billing/checkout', { amount_usd: '150.00' })).status).toBe(403);
    expect((await api(agentKey, 'GET', '/v1/billing/payments')).status).toBe(403);
    expect(stripe.requests.length).toBe(before);
  });

  it('credits a paid session once when its webhook is delivered twice, to every instance at once', async () => {
    const { accountId, key, session, event } = await paidTopUp();
    const deliveries = await Promise.all(
      [...urls, ...urls].map((url) => stripe.deliver(event, { url: `${url}/webhooks/stripe` })),
    );
    expect(deliveries.map((d) => d.status)).toEqual(deliveries.map(() => 200));
    expect(await balance(accountId)).toBe('190.44');
    expect(await walletEvents(accountId, 'WalletToppedUp')).toHaveLength(1);
    // Once more, later: still once.
    expect((await stripe.deliver(event)).status).toBe(200);
    expect(await balance(accountId)).toBe('190.44');
    await t().gateway.runner.catchUpToHead();
    const list = await json(await api(key, 'GET', '/v1/billing/payments'));
    expect(list.data[0]).toMatchObject({ id: session.id, status: 'paid', amount_usd: '150.00' });
  });

  it('refuses a bad signature and a replay of an old event with 400, changing nothing', async () => {
    const { accountId, event } = await paidTopUp();
    expect((await stripe.deliver(event, { secret: 'whsec_wrong' })).status).toBe(400);
    const old = await stripe.deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 600 });
    expect(old.status).toBe(400);
    expect(old.body).toMatch(/tolerance/i);
    const unsigned = await fetch(stripe.webhookUrl!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(event) });
    expect(unsigned.status).toBe(400);
    // A signed body altered after signing.
    const { payload, header } = stripe.signed(event);
    const altered = payload.replace('"amount_total": 15000', '"amount_total": 99999900');
    expect(altered).not.toBe(payload);
    expect((await fetch(stripe.webhookUrl!, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: altered })).status).toBe(400);
    expect(await balance(accountId)).toBe('40.44');
    expect(await walletEvents(accountId, 'WalletToppedUp')).toHaveLength(0);
  });

  it('records a session the gateway never opened for the operator, credits nothing, and answers 2xx', async () => {
    const foreign = stripe.foreignSessionEvent(50_000);
    const delivered = await stripe.deliver(foreign);
    expect(delivered.status).toBe(200);
    expect(JSON.parse(delivered.body)).toEqual({ received: true, outcome: 'unmatched' });
    await stripe.deliver(foreign);
    await t().gateway.runner.catchUpToHead();
    const sessionId = (foreign.data.object as { id: string }).id;
    await expect.poll(async () => (await t().admin('GET', '/payments/webhooks')).json().data.filter((d: { object_id: string }) => d.object_id === sessionId)).toEqual([
      expect.objectContaining({ event_id: foreign.id, event_type: 'checkout.session.completed', outcome: 'unmatched' }),
    ]);
    const metrics = await (await fetch(`${urls[0]}/metrics`)).text();
    expect(metrics).toMatch(/gateway_payment_webhooks_total\{outcome="unmatched"\} [1-9]/);
    expect(metrics).toMatch(/gateway_payment_webhooks_set_aside\{outcome="unmatched"\} [1-9]/);
  });

  it('debits a partial refund, then the rest, each once (amount_refunded is cumulative)', async () => {
    const { accountId, event, session, paymentIntent } = await paidTopUp();
    await stripe.deliver(event);
    expect(await balance(accountId)).toBe('190.44');
    const partial = await t().admin('POST', `/payments/${session.id}/refunds`, { amount_usd: '50.00' });
    expect(partial.statusCode).toBe(201);
    expect(partial.json()).toMatchObject({ payment_id: session.id, amount_usd: '50.00' });
    // The refund itself does not debit: the webhook does.
    expect(await balance(accountId)).toBe('190.44');
    const first = stripe.refundedEvent(paymentIntent);
    expect((await stripe.deliver(first)).status).toBe(200);
    expect((await stripe.deliver(first)).status).toBe(200);
    expect(await balance(accountId)).toBe('140.44');
    expect((await t().admin('POST', `/payments/${session.id}/refunds`, {})).json().amount_usd).toBe('100.00');
    const full = stripe.refundedEvent(paymentIntent);
    await stripe.deliver(full);
    // An older delivery arriving late takes nothing more.
    await stripe.deliver(first);
    await stripe.deliver(full);
    expect(await balance(accountId)).toBe('40.44');
    expect((await walletEvents(accountId, 'WalletDebited')).map((e: { data: { amount: string } }) => e.data.amount)).toEqual(['50000000000', '100000000000']);
    await t().gateway.runner.catchUpToHead();
    await expect.poll(async () => (await t().admin('GET', `/payments?account_id=${accountId}`)).json().data[0]).toMatchObject({ status: 'refunded', refunded_usd: '150.00' });
    expect((await t().admin('POST', `/payments/${session.id}/refunds`, {})).statusCode).toBe(400);
  });

  it('debits a lost dispute; below zero the next call gets 402 through the openai SDK', async () => {
    const { accountId, key, event, session, paymentIntent } = await paidTopUp();
    await stripe.deliver(event);
    const chat = new OpenAI({ apiKey: key, baseURL: `${urls[0]}/v1`, maxRetries: 0 });
    await chat.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
    // 50 of it refunded, then all 150 lost in a dispute: more than the wallet holds.
    await t().admin('POST', `/payments/${session.id}/refunds`, { amount_usd: '50.00' });
    await stripe.deliver(stripe.refundedEvent(paymentIntent));
    const dispute = stripe.disputeLostEvent(paymentIntent, 15_000);
    expect((await stripe.deliver(dispute)).status).toBe(200);
    await stripe.deliver(dispute);
    const after = await balance(accountId);
    expect(after.startsWith('-')).toBe(true);
    expect(await walletEvents(accountId, 'WalletDebited')).toHaveLength(2);
    const refused = await chat.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    // Topping up is still possible at a negative balance.
    expect((await api(key, 'POST', '/v1/billing/checkout', { amount_usd: '200' })).status).toBe(201);
    const verified = await t().admin('GET', `/accounts/${accountId}`);
    expect(verified.json().balance_usd).toBe(after);
    // `ledger verify`: the replayed wallets (debits included) agree with the read models, money conserved.
    await t().gateway.ledger.idle();
    await t().gateway.runner.catchUpToHead();
    expect(await verifyLedger(t().gateway.storage.store, t().gateway.storage.sql, { accountId })).toEqual([]);
  });
});
