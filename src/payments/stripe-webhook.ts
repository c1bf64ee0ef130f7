import type Stripe from 'stripe';
import type { PaymentNotice } from './notice';

const idOf = (value: string | { id: string } | null | undefined): string | null => (value == null ? null : typeof value === 'string' ? value : value.id);

/**
 * A verified Stripe event as a notice (pure): `checkout.session.completed` with `payment_status: paid`,
 * `charge.refunded` (its `amount_refunded` is cumulative), and `charge.dispute.closed` with status `lost`.
 * Anything else is ignored: the gateway answers it 2xx so Stripe does not retry it.
 */
export function noticeOf(event: Stripe.Event): PaymentNotice {
  const ignored = { kind: 'ignored', eventId: event.id, type: event.type } as const;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const session = event.data.object;
      if (session.payment_status !== 'paid' || session.amount_total === null) return ignored;
      return {
        kind: 'paid',
        eventId: event.id,
        sessionId: session.id,
        accountRef: session.client_reference_id,
        paymentIntent: idOf(session.payment_intent),
        amountCents: BigInt(session.amount_total),
      };
    }
    case 'charge.refunded': {
      const charge = event.data.object;
      const paymentIntent = idOf(charge.payment_intent);
      if (!paymentIntent) return ignored;
      return { kind: 'refunded', eventId: event.id, paymentIntent, refundedCents: BigInt(charge.amount_refunded) };
    }
    case 'charge.dispute.closed': {
      const dispute = event.data.object;
      const paymentIntent = idOf(dispute.payment_intent);
      if (dispute.status !== 'lost' || !paymentIntent) return ignored;
      return { kind: 'dispute_lost', eventId: event.id, paymentIntent, disputeId: dispute.id, amountCents: BigInt(dispute.amount) };
    }
    default:
      return ignored;
  }
}
