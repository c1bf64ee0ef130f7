import { z } from 'zod';
import { Timestamp, Units, defineEvent, type EventOf } from './codec';

/** A paid top-up's stream: `payment-{sessionId}`, the provider's checkout session id (Stripe's `cs_…`). */
export const paymentStream = (sessionId: string) => `payment-${sessionId}`;
/** Which session a provider's payment intent paid: `paymentintent-{id}`, so that a refund or a dispute
 * (which name the payment intent, not the session) finds its payment without a lagging read model. */
export const paymentIntentStream = (paymentIntent: string) => `paymentintent-${paymentIntent}`;
/** Webhook deliveries the gateway could not apply, for the operator: one stream. */
export const PAYMENT_WEBHOOKS_STREAM = 'payment-webhooks';

/** The gateway opened a checkout of `amount` (nano-dollars) for the account with the provider. */
export const CheckoutOpened = defineEvent(
  'CheckoutOpened',
  z.object({ session_id: z.string(), account_id: z.string(), provider: z.string(), amount: Units, url: z.string(), at: Timestamp }),
);
/** The provider says the session was paid; the wallet was credited `amount` (reference: the session id). */
export const PaymentPaid = defineEvent(
  'PaymentPaid',
  z.object({ session_id: z.string(), payment_intent: z.string().nullable(), amount: Units, event_id: z.string(), at: Timestamp }),
);
/** The provider refunded `refunded` of the payment in all so far (cumulative). */
export const PaymentRefunded = defineEvent(
  'PaymentRefunded',
  z.object({ session_id: z.string(), refunded: Units, event_id: z.string(), at: Timestamp }),
);
/** A dispute of the payment was lost: `amount` went back to the card holder. */
export const PaymentDisputeLost = defineEvent(
  'PaymentDisputeLost',
  z.object({ session_id: z.string(), dispute_id: z.string(), amount: Units, event_id: z.string(), at: Timestamp }),
);
export const PaymentIntentLinked = defineEvent(
  'PaymentIntentLinked',
  z.object({ payment_intent: z.string(), session_id: z.string(), account_id: z.string(), at: Timestamp }),
);
/**
 * A verified webhook delivery the gateway did not apply: `unmatched` (a session or payment it never
 * created: recorded, never credited) or `failed` (the wallet refused it, e.g. an amount below the minimum).
 */
export const PaymentWebhookSetAside = defineEvent(
  'PaymentWebhookSetAside',
  z.object({
    event_id: z.string(),
    event_type: z.string(),
    outcome: z.enum(['unmatched', 'failed']),
    object_id: z.string(),
    reason: z.string(),
    at: Timestamp,
  }),
);

export const paymentEvents = [CheckoutOpened, PaymentPaid, PaymentRefunded, PaymentDisputeLost, PaymentIntentLinked, PaymentWebhookSetAside] as const;

export type PaymentEvent = EventOf<(typeof paymentEvents)[number]>;
