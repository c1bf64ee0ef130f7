import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';

/**
 * A local stand-in for Stripe's API, speaking its wire format for the endpoints the gateway uses
 * (form-encoded requests, JSON objects): checkout sessions create and retrieve, refunds create. The
 * gateway reaches it through STRIPE_API_BASE with the official SDK. It also plays the payer (`GET /pay/{id}`
 * is the hosted checkout page, `POST /pay/{id}` pays) and Stripe's webhook sender: events are signed with
 * the SDK's `generateTestHeaderString` and delivered to `webhookUrl`, `deliveries` times each.
 */
export interface StripeStandIn {
  readonly url: string;
  readonly secretKey: string;
  readonly webhookSecret: string;
  /** Every API request the stand-in received (the payer's pages not included). */
  readonly requests: { method: string; path: string; form: URLSearchParams }[];
  readonly sessions: Map<string, Stripe.Checkout.Session>;
  /** Where paid sessions' events go, and how many times each is delivered (Stripe delivers at least once). */
  webhookUrl: string | null;
  deliveries: number;
  /** The gateway's env for this stand-in. */
  env(): Record<string, string>;
  /** Marks a session paid, as the payer's page does; returns its `checkout.session.completed` event. */
  pay(sessionId: string): Stripe.Event;
  /** The `charge.refunded` event of a payment intent after its refunds so far. */
  refundedEvent(paymentIntent: string): Stripe.Event;
  /** A `charge.dispute.closed` event with status `lost`. */
  disputeLostEvent(paymentIntent: string, amountCents: number): Stripe.Event;
  /** A completed session the gateway never opened. */
  foreignSessionEvent(amountCents: number): Stripe.Event;
  /** The body and `Stripe-Signature` header Stripe would send (timestamp: Unix seconds, default now). */
  signed(event: Stripe.Event, options?: { timestamp?: number; secret?: string }): { payload: string; header: string };
  /** Delivers an event to `url` (default webhookUrl) once; answers the status and body. */
  deliver(event: Stripe.Event, options?: { url?: string; timestamp?: number; secret?: string }): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

const id = (prefix: string) => `${prefix}_test_${randomBytes(12).toString('hex')}`;
const sdk = new Stripe('sk_test_stand_in');

function event(type: string, object: unknown): Stripe.Event {
  return {
    id: id('evt'),
    object: 'event',
    api_version: '2025-01-27.acacia',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
    data: { object },
  } as unknown as Stripe.Event;
}

async function formOf(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function json(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
  response.end(JSON.stringify(body));
}

export async function startStripeStandIn(): Promise<StripeStandIn> {
  const sessions = new Map<string, Stripe.Checkout.Session>();
  /** Per payment intent: its charge, amount and refunds so far. */
  const intents = new Map<string, { charge: string; amount: number; refunded: number }>();
  const requests: StripeStandIn['requests'] = [];
  let base = '';

  const stripeError = (response: ServerResponse, status: number, message: string) =>
    json(response, status, { error: { type: 'invalid_request_error', message } });

  const server: Server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const form = await formOf(request);
    const pay = /^\/pay\/([^/]+)$/.exec(url.pathname);
    if (pay) {
      const session = sessions.get(pay[1]!);
      if (!session) return stripeError(response, 404, 'no such session');
      if (request.method === 'POST') {
        const paid = standIn.pay(session.id);
        for (let i = 0; i < standIn.deliveries; i++) await standIn.deliver(paid);
        response.writeHead(303, { location: session.success_url!.replace('{CHECKOUT_SESSION_ID}', session.id) });
        return response.end();
      }
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return response.end(
        `<!doctype html><title>Stripe stand-in checkout</title><h1>Pay ${(session.amount_total! / 100).toFixed(2)} USD</h1>` +
          `<form method="post" action="/pay/${session.id}"><button type="submit">Pay</button></form>`,
      );
    }
    requests.push({ method: request.method ?? '', path: url.pathname, form });
    if (request.headers.authorization !== `Bearer ${standIn.secretKey}`) return stripeError(response, 401, 'Invalid API Key provided');
    if (request.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
      const amount = Number(form.get('line_items[0][price_data][unit_amount]'));
      const quantity = Number(form.get('line_items[0][quantity]') ?? 1);
      if (form.get('mode') !== 'payment' || !Number.isInteger(amount) || amount <= 0) return stripeError(response, 400, 'mode payment and a line item are required');
      const sessionId = id('cs');
      const session = {
        id: sessionId,
        object: 'checkout.session',
        mode: 'payment',
        status: 'open',
        payment_status: 'unpaid',
        currency: form.get('line_items[0][price_data][currency]'),
        amount_total: amount * quantity,
        amount_subtotal: amount * quantity,
        client_reference_id: form.get('client_reference_id'),
        metadata: { account_id: form.get('metadata[account_id]') },
        payment_intent: null,
        success_url: form.get('success_url'),
        cancel_url: form.get('cancel_url'),
        url: `${base}/pay/${sessionId}`,
        livemode: false,
        created: Math.floor(Date.now() / 1000),
      } as unknown as Stripe.Checkout.Session;
      sessions.set(sessionId, session);
      return json(response, 200, session);
    }
    const retrieve = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(url.pathname);
    if (request.method === 'GET' && retrieve) {
      const session = sessions.get(retrieve[1]!);
      return session ? json(response, 200, session) : stripeError(response, 404, `No such checkout.session: '${retrieve[1]}'`);
    }
    if (request.method === 'POST' && url.pathname === '/v1/refunds') {
      const intent = intents.get(form.get('payment_intent') ?? '');
      if (!intent) return stripeError(response, 404, 'No such payment_intent');
      const amount = form.has('amount') ? Number(form.get('amount')) : intent.amount - intent.refunded;
      if (amount <= 0 || intent.refunded + amount > intent.amount) return stripeError(response, 400, 'Refund amount is greater than unrefunded amount on charge');
      intent.refunded += amount;
      return json(response, 200, { id: id('re'), object: 'refund', amount, charge: intent.charge, payment_intent: form.get('payment_intent'), status: 'succeeded', currency: 'usd' });
    }
    return stripeError(response, 404, `Unrecognized request URL (${request.method}: ${url.pathname})`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  const standIn: StripeStandIn = {
    url: base,
    secretKey: `sk_test_${randomBytes(8).toString('hex')}`,
    webhookSecret: `whsec_${randomBytes(16).toString('hex')}`,
    requests,
    sessions,
    webhookUrl: null,
    deliveries: 1,
    env() {
      return { STRIPE_SECRET_KEY: this.secretKey, STRIPE_WEBHOOK_SECRET: this.webhookSecret, STRIPE_API_BASE: base };
    },
    pay(sessionId) {
      const session = sessions.get(sessionId)!;
      const paymentIntent = (session.payment_intent as string | null) ?? id('pi');
      if (!intents.has(paymentIntent)) intents.set(paymentIntent, { charge: id('ch'), amount: session.amount_total!, refunded: 0 });
      Object.assign(session, { status: 'complete', payment_status: 'paid', payment_intent: paymentIntent });
      return event('checkout.session.completed', { ...session });
    },
    refundedEvent(paymentIntent) {
      const intent = intents.get(paymentIntent)!;
      return event('charge.refunded', {
        id: intent.charge,
        object: 'charge',
        amount: intent.amount,
        amount_refunded: intent.refunded,
        refunded: intent.refunded === intent.amount,
        payment_intent: paymentIntent,
        currency: 'usd',
      });
    },
    disputeLostEvent(paymentIntent, amountCents) {
      const intent = intents.get(paymentIntent)!;
      return event('charge.dispute.closed', { id: id('dp'), object: 'dispute', amount: amountCents, charge: intent.charge, payment_intent: paymentIntent, status: 'lost', currency: 'usd' });
    },
    foreignSessionEvent(amountCents) {
      const sessionId = id('cs');
      return event('checkout.session.completed', {
        id: sessionId,
        object: 'checkout.session',
        mode: 'payment',
        status: 'complete',
        payment_status: 'paid',
        amount_total: amountCents,
        client_reference_id: 'acct_someone',
        payment_intent: id('pi'),
      });
    },
    signed(e, options = {}) {
      const payload = JSON.stringify(e, null, 2);
      const header = sdk.webhooks.generateTestHeaderString({
        payload,
        secret: options.secret ?? standIn.webhookSecret,
        ...(options.timestamp !== undefined ? { timestamp: options.timestamp } : {}),
      });
      return { payload, header };
    },
    async deliver(e, options = {}) {
      const target = options.url ?? standIn.webhookUrl;
      if (!target) throw new Error('no webhook URL to deliver to');
      const { payload, header } = standIn.signed(e, options);
      const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload });
      return { status: response.status, body: await response.text() };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return standIn;
}
