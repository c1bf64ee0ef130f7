import { Gauge, type Registry } from 'prom-client';
import { TASK_FAMILIES, type TaskFamily } from '../events/catalog';
import type { OpenHolds } from '../projections/accounts/open-holds';
import type { ProjectionLag } from '../projections/runner/lag';
import { sampled } from './sampled';

/** What the gateway's metrics read at each scrape. A gauge whose source is absent is not registered. */
export interface MetricSources {
  /** Events parked per projection (see src/projections/runner/parked.ts), every projection named. */
  parkedEvents?(): Promise<ReadonlyMap<string, number>>;
  projectionLag?(): Promise<ReadonlyMap<string, ProjectionLag>>;
  openHolds?(): Promise<OpenHolds>;
  /** Media tasks in flight per family (the task views); a family absent from the map has none. */
  tasksInFlight?(): Promise<ReadonlyMap<TaskFamily, number>>;
}

/**
 * The gauges whose values live in the database, read at each scrape (`collect`) through `sampled` (one read
 * per scrape shared by the gauges that show it, reused for `sampleMs`), registered in `registry`.
 */
export function scrapedGauges(registry: Registry, sources: MetricSources, onError: (error: unknown) => void, sampleMs: number): void {
  const registers = [registry];
  // A failed read keeps the last values: the scrape still answers, with the other metrics.
  const each = <T>(read: () => Promise<T>, apply: (value: T) => void) => {
    const sample = sampled(read, sampleMs);
    return async () => {
      try {
        apply(await sample());
      } catch (error) {
        onError(error);
      }
    };
  };
  const { parkedEvents, projectionLag, openHolds, tasksInFlight } = sources;
  if (parkedEvents) {
    const collect = each(parkedEvents.bind(sources), (counts) => {
      for (const [projection, count] of counts) parked.set({ projection }, count);
    });
    const parked: Gauge<'projection'> = new Gauge({
      name: 'gateway_projection_parked_events',
      help: 'Events a projection could not apply and parked (their streams are left as they were before them); see `gateway ledger verify --parked`.',
      labelNames: ['projection'],
      registers,
      collect,
    });
  }
  if (projectionLag) {
    const collect = each(projectionLag.bind(sources), (lags) => {
      for (const [projection, lag] of lags) {
        events.set({ projection }, lag.events);
        seconds.set({ projection }, lag.seconds);
      }
    });
    const events: Gauge<'projection'> = new Gauge({
      name: 'gateway_projection_lag_events',
      help: 'Events in the log after a projection\'s checkpoint (counted up to 100,000; EventStoreDB: 1,000).',
      labelNames: ['projection'],
      registers,
      collect,
    });
    const seconds: Gauge<'projection'> = new Gauge({
      name: 'gateway_projection_lag_seconds',
      help: 'Age of the oldest event a projection has not applied; 0 at the head of the log.',
      labelNames: ['projection'],
      registers,
      collect,
    });
  }
  if (openHolds) {
    const collect = each(openHolds.bind(sources), (holds) => {
      open.set(holds.open);
      oldest.set(holds.oldestAgeSeconds);
      expired.set(holds.expired);
    });
    const open = new Gauge({ name: 'gateway_holds_open', help: 'Holds open (the holds read model).', registers, collect });
    const oldest = new Gauge({
      name: 'gateway_holds_open_oldest_age_seconds',
      help: 'Age of the oldest open hold; 0 when none is open. A call holds for at most its time limit plus two minutes.',
      registers,
      collect,
    });
    const expired = new Gauge({
      name: 'gateway_holds_open_expired',
      help: 'Open holds past their deadline, which the hold sweeper releases (every 30 s).',
      registers,
      collect,
    });
  }
  if (tasksInFlight) {
    const collect = each(tasksInFlight.bind(sources), (counts) => {
      for (const family of TASK_FAMILIES) tasks.set({ family }, counts.get(family) ?? 0);
    });
    const tasks: Gauge<'family'> = new Gauge({
      name: 'gateway_tasks_in_flight',
      help: 'Media tasks created and not yet ended (the task views), by family; each holds its reservation until it ends.',
      labelNames: ['family'],
      registers,
      collect,
    });
  }
}
