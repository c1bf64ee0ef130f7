import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Ledger } from '../commands/ledger';
import { available } from '../commands/wallet/state';
import { baseUrlOf } from '../http/resources/wiki';
import { parseUsd } from '../money/usd';
import type { Payments } from '../payments/service';
import { payments as paymentRows } from '../projections/payments/queries';
import type { Sql } from '../storage/sql';
import { billingPage } from './billing-page';
import { doc, FORM_BYTES } from './forms';
import { cspWithFormAction, field } from './guard';
import type { Html } from './html';
import { notice, type ConsoleViewer } from './layout';

export interface BillingRouteOptions {
  readonly ledger: Ledger;
  readonly sql: Sql;
  /** Absent or without a provider: the page says top-ups are the operator's. */
  readonly payments: Payments | undefined;
  readonly publicBaseUrl: string | undefined;
  readonly viewerOf: (request: FastifyRequest) => ConsoleViewer;
  readonly send: (reply: FastifyReply, status: number, title: string, body: Html, viewer: ConsoleViewer | null, current?: string) => FastifyReply;
}

/** The Billing page and its top-up form, which opens a checkout (the billing API's command) and sends the
 * holder to the provider's payment page. */
export function billingRoutes(app: FastifyInstance, options: BillingRouteOptions): void {
  const { ledger, sql, payments, viewerOf, send } = options;
  const provider = payments?.provider ?? null;
  const view = async (request: FastifyRequest, reply: FastifyReply, status: number, top: Html | null, form: { amount?: string; error?: string } = {}) => {
    const viewer = viewerOf(request);
    const wallet = await ledger.wallet(viewer.accountId);
    const rows = await paymentRows(sql, viewer.accountId, 50);
    const body = billingPage(viewer, { balance: wallet.balance, available: available(wallet), provider: provider?.label ?? null, payments: rows, ...form }, top);
    if (provider) reply.header('content-security-policy', cspWithFormAction(provider.checkoutOrigins));
    return send(reply, status, 'Billing', body, viewer, '/console/billing');
  };

  app.get<{ Querystring: { paid?: string; cancelled?: string } }>('/billing', { config: { openapi: doc('consoleBilling', 'Billing: balance, top-up form, payments', 'GET') } }, async (request, reply) =>
    view(
      request,
      reply,
      200,
      request.query.paid ? notice('Thank you. Your balance is credited as soon as the payment provider confirms the payment (usually within seconds); reload this page to see it.') : null,
    ),
  );

  app.post('/billing/checkout', { bodyLimit: FORM_BYTES, config: { openapi: doc('consoleCheckout', "Top up: opens a checkout and redirects to the provider's payment page", 'POST', { responses: { 303: { description: "To the provider's payment page.", mediaTypes: [] } } }) } }, async (request, reply) => {
    const viewer = viewerOf(request);
    const amount = field(request.body, 'amount_usd').trim();
    if (!payments || !provider) return view(request, reply, 409, notice('Top-ups are handled by the operator.', 'error'));
    if (!/^\d{1,10}(\.\d{1,2})?$/.test(amount)) return view(request, reply, 400, null, { amount, error: 'write an amount in US dollars with at most 2 decimals, e.g. 150 or 150.00 (no $ sign, no commas)' });
    const base = baseUrlOf(request, options.publicBaseUrl);
    const opened = await payments.checkout(viewer.accountId, parseUsd(amount), { successUrl: `${base}/console/billing?paid={CHECKOUT_SESSION_ID}`, cancelUrl: `${base}/console/billing?cancelled=1` });
    if (!opened.ok) {
      const status = opened.error.code === 'invalid_request' ? 400 : 502;
      return view(request, reply, status, status === 502 ? notice(opened.error.message, 'error') : null, { amount, error: opened.error.message.replace(/^amount_usd: /, '') });
    }
    return reply.redirect(opened.url, 303);
  });
}
