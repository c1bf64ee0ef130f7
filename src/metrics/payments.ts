import { Counter, Gauge, type Registry } from 'prom-client';

export type WebhookOutcome = 'credited' | 'debited' | 'duplicate' | 'unmatched' | 'failed' | 'ignored' | 'bad_signature' | 'error';
const OUTCOMES: readonly WebhookOutcome[] = ['credited', 'debited', 'duplicate', 'unmatched', 'failed', 'ignored', 'bad_signature', 'error'];

/**
 * Payment webhooks (src/payments): deliveries this instance answered, by what it did with them, and the
 * deliveries set aside for the operator in the database (every instance's), read at each scrape.
 * `unmatched`: a session or payment the gateway never opened; `failed`: the wallet refused it;
 * `error`: the gateway could not apply it now (answered 500: the provider retries).
 */
export class PaymentMetrics {
  private readonly deliveries: Counter<'outcome'>;

  constructor(registry: Registry) {
    this.deliveries = new Counter({
      name: 'gateway_payment_webhooks_total',
      help: 'Payment provider webhook deliveries this instance answered, by outcome: credited, debited, duplicate, unmatched, failed, ignored, bad_signature, error.',
      labelNames: ['outcome'],
      registers: [registry],
    });
    for (const outcome of OUTCOMES) this.deliveries.inc({ outcome }, 0);
  }

  delivered(outcome: WebhookOutcome): void {
    this.deliveries.inc({ outcome });
  }

  /** The gauge of deliveries set aside, read from the database at each scrape. */
  setAside(registry: Registry, read: () => Promise<{ unmatched: number; failed: number }>, onError: (error: unknown) => void): void {
    new Gauge({
      name: 'gateway_payment_webhooks_set_aside',
      help: 'Payment webhook deliveries set aside for the operator (GET /admin/v1/payments/webhooks), by outcome: unmatched, failed.',
      labelNames: ['outcome'],
      registers: [registry],
      async collect() {
        try {
          const counts = await read();
          this.set({ outcome: 'unmatched' }, counts.unmatched);
          this.set({ outcome: 'failed' }, counts.failed);
        } catch (error) {
          onError(error);
        }
      },
    });
  }
}
