import { Gauge, Registry } from 'prom-client';

/** What the gateway's metrics are read from, asked at each scrape. */
export interface MetricSources {
  /** Events parked per projection (see src/projections/runner/parked.ts), every projection named. */
  parkedEvents(): Promise<ReadonlyMap<string, number>>;
}

/**
 * The metrics of one gateway instance, in a registry of its own (never prom-client's global
 * default: a process may hold several gateways, as the tests do). Every metric of the gateway is
 * registered here.
 */
export class GatewayMetrics {
  readonly registry = new Registry();

  constructor(sources: MetricSources, onError: (error: unknown) => void = () => {}) {
    new Gauge({
      name: 'gateway_projection_parked_events',
      help: 'Events a projection could not apply and parked (their streams are left as they were before them); see `gateway ledger verify --parked`.',
      labelNames: ['projection'],
      registers: [this.registry],
      async collect() {
        // A failed read keeps the last values: the scrape still answers, with the other metrics.
        try {
          for (const [projection, count] of await sources.parkedEvents()) this.set({ projection }, count);
        } catch (error) {
          onError(error);
        }
      },
    });
  }

  /** The text exposition format. */
  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
