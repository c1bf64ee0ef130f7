import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zodMessage } from '../../config/zod-message';
import type { Position } from '../../events/store/port';
import { formatUsd, parseUsd } from '../../money/usd';
import type { PaymentErrorCode, Payments } from '../../payments/service';
import { payments as paymentRows, type PaymentRow } from '../../projections/payments/queries';
import type { SqlQuery } from '../../storage/sql';
import { GatewayError, type ErrorCode } from '../errors';
import { countQuery } from '../intake/numbers';
import type { RouteDoc } from '../openapi/route-doc';
import { baseUrlOf } from './wiki';

/** Free (a wallet at or below zero must be able to top up) and not rate limited, like the balance views. */
const FREE = { auth: 'key', free: true, touchesLastUsed: false, liveWallet: true, rateLimited: false } as const;
const BODY_BYTES = 16 * 1024;

const CheckoutBody = z.strictObject({
  amount_usd: z.string().regex(/^\d{1,10}(\.\d{1,2})?$/, 'a USD amount as a decimal string with at most 2 decimal places, such as "150.00"').describe('At least 134.8 (the minimum top-up).'),
});
const PaymentsQuery = z.looseObject({ limit: countQuery(1, 100).describe('Default 30; larger than 100 is clamped to 100.') });

const CHECKOUT_DOC: RouteDoc = {
  operationId: 'createCheckout',
  summary: "Open a checkout to top up the key's account (at least 134.8 USD)",
  description: "Free. The answer's `url` is the provider's payment page; the wallet is credited once the provider's signed webhook says the session was paid. Below the minimum: 400 `invalid_request` and nothing is sent to the provider. Without a payment provider configured: 503 (top-ups are then the operator's).",
  tags: ['account'],
  body: { json: CheckoutBody },
  responses: { 201: { description: '`{id, url, amount_usd, status: open}`.' } },
};
const PAYMENTS_DOC: RouteDoc = {
  operationId: 'listPayments',
  summary: "The account's paid top-ups, newest first",
  description: 'Free. `status`: open, paid, partially_refunded, refunded, disputed.',
  tags: ['account'],
  query: PaymentsQuery,
  responses: { 200: { description: '`{data: [{id, amount_usd, status, refunded_usd, disputed_usd, provider, created_at, updated_at}]}`.' } },
};

/** The HTTP answer of a payment refusal. */
export function paymentError(code: PaymentErrorCode, message: string): GatewayError {
  const codes: Record<PaymentErrorCode, ErrorCode> = {
    invalid_request: 'invalid_request',
    payments_unavailable: 'service_unavailable',
    payment_not_found: 'not_found',
    payment_not_refundable: 'invalid_request',
    provider_error: 'upstream_unreachable',
  };
  return new GatewayError(codes[code], message);
}

export const paymentAnswer = (p: PaymentRow) => ({
  id: p.sessionId,
  amount_usd: formatUsd(p.amount),
  status: p.status,
  refunded_usd: formatUsd(p.refunded),
  disputed_usd: formatUsd(p.disputed),
  provider: p.provider,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
});

export interface BillingDeps {
  readonly payments: Payments;
  readonly sql: SqlQuery;
  readonly publicBaseUrl: string | undefined;
  /** Waits until the read models have applied the log up to a position. */
  readonly settled: (position: Position) => Promise<void>;
}

/** `POST /v1/billing/checkout` and `GET /v1/billing/payments` (DESIGN.md, "Accounts and payments"). */
export function billingRoutes(deps: BillingDeps) {
  return async (app: FastifyInstance) => {
    app.post('/v1/billing/checkout', { bodyLimit: BODY_BYTES, config: { ...FREE, openapi: CHECKOUT_DOC } }, async (request, reply) => {
      const parsed = CheckoutBody.safeParse(request.body ?? {});
      if (!parsed.success) throw new GatewayError('invalid_request', zodMessage(parsed.error));
      const base = baseUrlOf(request, deps.publicBaseUrl);
      const opened = await deps.payments.checkout(request.caller!.accountId, parseUsd(parsed.data.amount_usd), {
        successUrl: `${base}/console/billing?paid={CHECKOUT_SESSION_ID}`,
        cancelUrl: `${base}/console/billing`,
      });
      if (!opened.ok) throw paymentError(opened.error.code, opened.error.message);
      // The payment list shows it from the next read on.
      if (opened.position) await deps.settled(opened.position);
      return reply.code(201).send({ id: opened.sessionId, url: opened.url, amount_usd: formatUsd(opened.amount), status: 'open' });
    });

    app.get('/v1/billing/payments', { config: { ...FREE, openapi: PAYMENTS_DOC } }, async (request) => {
      const query = request.query as z.output<typeof PaymentsQuery>;
      const rows = await paymentRows(deps.sql, request.caller!.accountId, query.limit ?? 30);
      return { data: rows.map(paymentAnswer) };
    });
  };
}
