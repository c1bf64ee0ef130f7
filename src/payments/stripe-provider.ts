import Stripe from 'stripe';
import type { CheckoutRequest, OpenedCheckout, PaymentProvider } from './provider';
import type { StripeSettings } from './settings';

/** The Stripe client for the settings: STRIPE_API_BASE becomes the SDK's host, port and protocol. */
export function stripeClient(settings: StripeSettings): Stripe {
  const base = new URL(settings.apiBase);
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(settings.secretKey, {
    host: base.hostname,
    port: base.port || (protocol === 'http' ? 80 : 443),
    protocol,
    maxNetworkRetries: 2,
    timeout: 20_000,
    telemetry: false,
  });
}

/** Top-ups through Stripe Checkout: a session in `payment` mode, one line item of the amount in US cents,
 * `client_reference_id` the account. */
export class StripeProvider implements PaymentProvider {
  readonly name = 'stripe';
  readonly label = 'Stripe';
  readonly checkoutOrigins: readonly string[];
  /** `apiBase`: a stand-in or mock server (STRIPE_API_BASE) serves its checkout pages from its own origin. */
  constructor(
    private readonly stripe: Stripe,
    apiBase: string,
  ) {
    const own = new URL(apiBase).origin;
    this.checkoutOrigins = own === 'https://api.stripe.com' ? ['https://checkout.stripe.com'] : ['https://checkout.stripe.com', own];
  }

  async openCheckout(request: CheckoutRequest): Promise<OpenedCheckout> {
    const session = await this.stripe.checkout.sessions.create({
      mode: 'payment',
      client_reference_id: request.accountId,
      line_items: [
        {
          quantity: 1,
          price_data: { currency: 'usd', unit_amount: Number(request.amountCents), product_data: { name: 'Gateway credit' } },
        },
      ],
      metadata: { account_id: request.accountId },
      success_url: request.successUrl,
      cancel_url: request.cancelUrl,
    });
    if (!session.url) throw new Error(`Stripe answered session ${session.id} without a url`);
    return { id: session.id, url: session.url };
  }

  async refund(paymentIntent: string, amountCents: bigint | null) {
    const refund = await this.stripe.refunds.create({ payment_intent: paymentIntent, ...(amountCents !== null ? { amount: Number(amountCents) } : {}) });
    return { id: refund.id };
  }
}
