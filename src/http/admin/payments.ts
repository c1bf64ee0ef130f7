import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatUsd, parseUsd } from '../../money/usd';
import type { Payments } from '../../payments/service';
import { payments as paymentRows, setAsideDeliveries, type PaymentRow } from '../../projections/payments/queries';
import type { SqlQuery } from '../../storage/sql';
import type { RouteDoc } from '../openapi/route-doc';
import { pageSizeQuery } from '../intake/numbers';
import { paymentAnswer } from '../resources/billing';
import { AdminError, parse } from './admin-error';

const ListQuery = z.looseObject({
  account_id: z.string().optional().describe("One account's payments (default: every account's)."),
  limit: pageSizeQuery(50, 500),
  cursor: z.string().optional().describe('`next_cursor` of the page before.'),
});
const RefundBody = z.strictObject({
  amount_usd: z
    .string()
    .regex(/^\d{1,10}(\.\d{1,2})?$/, 'a USD amount with at most 2 decimal places')
    .optional()
    .describe('Default: all that is left of the payment.'),
});

const doc = (operationId: string, summary: string, responses: RouteDoc['responses'], extra: Partial<RouteDoc> = {}): RouteDoc => ({
  operationId,
  summary,
  tags: ['admin-billing'],
  responses,
  ...extra,
});
const DOCS = {
  list: doc('listAllPayments', 'Paid top-ups of every account (or one), newest first', { 200: { description: '`{data: [payment], next_cursor}`.' } }, { query: ListQuery }),
  refund: doc(
    'refundPayment',
    'Refund a paid top-up through the payment provider (its webhook then debits the wallet)',
    { 201: { description: '`{payment_id, refund_id, amount_usd}`.' } },
    { body: { json: RefundBody, required: false }, errors: { 404: 'No such payment: `payment_not_found`.', 502: "The provider refused: `provider_error`." } },
  ),
  webhooks: doc('listPaymentWebhooks', 'Webhook deliveries set aside: unmatched (a session or payment never opened) or failed', { 200: { description: '`{data: [{event_id, event_type, outcome, object_id, reason, at}]}`.' } }),
};

const STATUS: Record<string, number> = { invalid_request: 400, payment_not_refundable: 409, payment_not_found: 404, payments_unavailable: 503, provider_error: 502 };

const cursorOf = (p: PaymentRow) => Buffer.from(JSON.stringify([p.createdAt, p.sessionId])).toString('base64url');
function parseCursor(text: string | undefined): { createdAt: number; sessionId: string } | null {
  if (text === undefined) return null;
  try {
    const [createdAt, sessionId] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as [number, string];
    if (Number.isInteger(createdAt) && typeof sessionId === 'string') return { createdAt, sessionId };
  } catch {
    // answered below
  }
  throw new AdminError(400, 'invalid_request', 'cursor: not a cursor this list gave');
}

/** `GET /payments`, `POST /payments/:id/refunds`, `GET /payments/webhooks` (docs/payments.md). */
export function paymentAdminRoutes(payments: Payments, sql: SqlQuery) {
  return async (app: FastifyInstance) => {
    app.get('/payments', { config: { openapi: DOCS.list } }, async (request) => {
      const query = request.query as z.output<typeof ListQuery>;
      const limit = query.limit;
      const rows = await paymentRows(sql, query.account_id ?? null, limit + 1, parseCursor(query.cursor));
      const page = rows.slice(0, limit);
      return {
        data: page.map((p) => ({ ...paymentAnswer(p), account_id: p.accountId, payment_intent: p.paymentIntent, url: p.url })),
        next_cursor: rows.length > limit ? cursorOf(page[page.length - 1]!) : null,
      };
    });

    app.get('/payments/webhooks', { config: { openapi: DOCS.webhooks } }, async () => {
      const rows = await setAsideDeliveries(sql, 500);
      return { data: rows.map((r) => ({ event_id: r.eventId, event_type: r.eventType, outcome: r.outcome, object_id: r.objectId, reason: r.reason, at: r.at })) };
    });

    app.post<{ Params: { id: string } }>('/payments/:id/refunds', { config: { openapi: DOCS.refund } }, async (request, reply) => {
      const body = parse(RefundBody, request.body ?? {});
      const refunded = await payments.refund(request.params.id, body.amount_usd === undefined ? null : parseUsd(body.amount_usd));
      if (!refunded.ok) throw new AdminError(STATUS[refunded.error.code] ?? 400, refunded.error.code, refunded.error.message);
      return reply.code(201).send({ payment_id: request.params.id, refund_id: refunded.refundId, amount_usd: formatUsd(refunded.amount) });
    });
  };
}
