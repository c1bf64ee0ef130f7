import type Stripe from 'stripe';
import type { Ledger } from '../commands/ledger';
import type { EventStore } from '../events/store/port';
import type { GatewayMetrics } from '../metrics/metrics';
import { setAsideCounts } from '../projections/payments/queries';
import type { SqlQuery } from '../storage/sql';
import { Payments } from './service';
import { stripeSettingsFromEnv } from './settings';
import { StripeProvider, stripeClient } from './stripe-provider';

export interface PaymentsSetup {
  readonly payments: Payments;
  /** The webhook's verifier: present when Stripe is configured. */
  readonly stripe: { readonly client: Stripe; readonly webhookSecret: string } | null;
}

/** The gateway's payments from its environment: Stripe when STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET
 * are set, else none (top-ups are the operator's); the set-aside gauge in `/metrics` either way. */
export function paymentsFromEnv(env: NodeJS.ProcessEnv, store: EventStore, ledger: Ledger, sql: SqlQuery, metrics: GatewayMetrics, now: () => number, onMetricsError: (error: unknown) => void): PaymentsSetup {
  const settings = stripeSettingsFromEnv(env);
  const client = settings ? stripeClient(settings) : null;
  metrics.payments.setAside(metrics.registry, () => setAsideCounts(sql), onMetricsError);
  return {
    payments: new Payments(store, ledger, client ? new StripeProvider(client, settings!.apiBase) : null, now),
    stripe: client && settings ? { client, webhookSecret: settings.webhookSecret } : null,
  };
}
