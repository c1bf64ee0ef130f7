/**
 * A payment provider, as the gateway needs one: open a hosted checkout for an account's top-up, and give
 * money back. What the provider later says of its payments (paid, refunded, disputed) reaches the gateway
 * as `PaymentNotice`s (notice.ts), however the provider delivers them (Stripe: signed webhooks). Stripe
 * is the real one (stripe-provider.ts); the demo provider (demo-provider.ts) is the zero-setup demo's.
 */
export interface CheckoutRequest {
  readonly accountId: string;
  /** US cents, a whole number (the top-up's amount). */
  readonly amountCents: bigint;
  /** Where the provider sends the payer back. */
  readonly successUrl: string;
  readonly cancelUrl: string;
}

export interface OpenedCheckout {
  /** The provider's id of the session (Stripe's `cs_…`): the payment's id and the top-up's reference. */
  readonly id: string;
  /** Where the payer pays. */
  readonly url: string;
}

export interface PaymentProvider {
  /** `stripe`, `demo`: recorded with each payment. */
  readonly name: string;
  /** Shown beside the top-up form: a demo provider says it takes no money. */
  readonly label: string;
  /** Origins of its checkout pages: the console's top-up form is redirected there (its CSP form-action). */
  readonly checkoutOrigins: readonly string[];
  openCheckout(request: CheckoutRequest): Promise<OpenedCheckout>;
  /** Refunds `amountCents` of a paid payment (null: what is left of it). The provider's notice of the
   * refund, not this call, debits the wallet. */
  refund(paymentIntent: string, amountCents: bigint | null): Promise<{ readonly id: string }>;
}

/** Whole US cents of an amount in units (1 unit = 10^-9 USD); null when it is not a whole number of cents. */
export const CENT = 10_000_000n;
export function centsOf(units: bigint): bigint | null {
  return units % CENT === 0n ? units / CENT : null;
}
