/** Stripe's settings, from the environment (README, "Payments"). Both keys or neither: a half
 * configuration is refused at start rather than found out at the first payment. */
export interface StripeSettings {
  readonly secretKey: string;
  readonly webhookSecret: string;
  /** STRIPE_API_BASE: Stripe's own by default; a local address for tests or Stripe's mock server. */
  readonly apiBase: string;
}

export const STRIPE_API_BASE = 'https://api.stripe.com';

export function stripeSettingsFromEnv(env: NodeJS.ProcessEnv): StripeSettings | null {
  const secretKey = env.STRIPE_SECRET_KEY?.trim() || '';
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET?.trim() || '';
  if (!secretKey && !webhookSecret) return null;
  if (!secretKey || !webhookSecret) throw new Error('STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET go together: set both, or neither');
  const apiBase = env.STRIPE_API_BASE?.trim() || STRIPE_API_BASE;
  let url: URL;
  try {
    url = new URL(apiBase);
  } catch {
    throw new Error(`STRIPE_API_BASE must be a URL (got ${JSON.stringify(apiBase)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('STRIPE_API_BASE must be an http(s) URL');
  return { secretKey, webhookSecret, apiBase };
}
