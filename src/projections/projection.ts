import type { DomainEvent } from '../events/catalog';
import type { RecordedEvent } from '../events/store/port';
import type { SqlQuery } from '../storage/sql';

/** An event of a followed stream, decoded once for every projection that reads it. */
export interface ProjectedEvent {
  readonly event: DomainEvent;
  readonly recorded: RecordedEvent;
}

/** A read model kept up to date from the global log. `applyBatch` runs inside the
 * transaction that also moves the projection's checkpoint, so it must only write
 * through `tx`. It gets the events of its streams in log order, a whole batch at once,
 * so that the hot projections can write each table with a few multi-row statements
 * instead of a few statements per event. Applying an event twice must not be possible
 * (the runner guarantees once) but must not be fatal either. */
export interface Projection {
  readonly name: string;
  /** Stream categories (prefixes) this projection follows; revisions are checked per stream. */
  readonly streams: readonly string[];
  /** Its tables, emptied by a rebuild, in an order safe to truncate. */
  readonly tables: readonly string[];
  readonly schema: string;
  applyBatch(tx: SqlQuery, items: readonly ProjectedEvent[]): Promise<void>;
}

/** For projections that see few events: each event with its own statements, in order. */
export function oneAtATime(apply: (tx: SqlQuery, event: DomainEvent, recorded: RecordedEvent) => Promise<void>): Projection['applyBatch'] {
  return async (tx, items) => {
    for (const { event, recorded } of items) await apply(tx, event, recorded);
  };
}
