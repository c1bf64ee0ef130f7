import { z } from 'zod';
import { Usd } from './account';

/** Paid top-ups: the holder's checkout and payment history, the operator's payments and webhook deliveries. */

const Unix = z.number().int().describe('Unix seconds.');
const Status = z
  .enum(['open', 'paid', 'partially_refunded', 'refunded', 'disputed'])
  .describe('`open`: not paid (yet); `paid`; `partially_refunded` / `refunded`: part or all of it given back; `disputed`: a dispute was lost.');

export const Checkout = z
  .object({ id: z.string().describe("The provider's checkout session id (Stripe's `cs_…`)."), url: z.string(), amount_usd: Usd, status: z.literal('open') })
  .meta({ description: 'A checkout opened: pay at `url`; the wallet is credited when the provider says it was paid.' });

export const Payment = z.object({
  id: z.string(),
  amount_usd: Usd,
  status: Status,
  refunded_usd: Usd,
  disputed_usd: Usd,
  provider: z.string(),
  created_at: Unix,
  updated_at: Unix,
});

export const PaymentList = z.object({ data: z.array(Payment) }).meta({ description: "The account's payments, newest first." });

export const AdminPayment = Payment.extend({ account_id: z.string(), payment_intent: z.string().nullable(), url: z.string() });
export const AdminPaymentList = z
  .object({ data: z.array(AdminPayment), next_cursor: z.string().nullable() })
  .meta({ description: 'Payments of every account (or one), newest first.' });

export const PaymentRefund = z
  .object({ payment_id: z.string(), refund_id: z.string(), amount_usd: Usd })
  .meta({ description: "The provider's refund: the wallet is debited when the provider's notice of it arrives." });

export const WebhookDeliveries = z
  .object({
    data: z.array(
      z.object({
        event_id: z.string(),
        event_type: z.string(),
        outcome: z.enum(['unmatched', 'failed']),
        object_id: z.string(),
        reason: z.string(),
        at: Unix,
      }),
    ),
  })
  .meta({ description: 'Verified webhook deliveries the gateway did not apply, newest first: `unmatched` (a session or payment it never opened) or `failed` (the wallet refused it).' });

export const WebhookReceived = z
  .object({ received: z.literal(true), outcome: z.enum(['credited', 'debited', 'duplicate', 'unmatched', 'failed', 'ignored']) })
  .meta({ description: 'What the gateway did with the delivery: `unmatched` and `failed` ones are set aside for the operator.' });
