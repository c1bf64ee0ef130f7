/** What a provider says of a payment, in the gateway's terms (Stripe's webhooks map to these in
 * stripe-webhook.ts). Amounts are US cents as the provider counts them. */
export type PaymentNotice =
  /** A checkout session was paid: credit it, once. */
  | { readonly kind: 'paid'; readonly eventId: string; readonly sessionId: string; readonly accountRef: string | null; readonly paymentIntent: string | null; readonly amountCents: bigint }
  /** A payment was refunded, `refundedCents` in all so far (cumulative). */
  | { readonly kind: 'refunded'; readonly eventId: string; readonly paymentIntent: string; readonly refundedCents: bigint }
  /** A dispute of a payment was lost: its amount went back to the card holder. */
  | { readonly kind: 'dispute_lost'; readonly eventId: string; readonly paymentIntent: string; readonly disputeId: string; readonly amountCents: bigint }
  /** Nothing the gateway acts on (another event type, a session not paid yet). */
  | { readonly kind: 'ignored'; readonly eventId: string; readonly type: string };

/** What the gateway did with a notice: the webhook metric's `outcome` label. */
export type NoticeOutcome = 'credited' | 'debited' | 'duplicate' | 'unmatched' | 'failed' | 'ignored';
