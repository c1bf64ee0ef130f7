import type { DomainEvent } from '../events/catalog';
import type { RecordedEvent } from '../events/store/port';
import type { SqlQuery } from '../storage/sql';

/** A read model kept up to date from the global log. `apply` runs inside the
 * transaction that also moves the projection's checkpoint, so it must only write
 * through `tx`, and applying an event twice must not be possible (the runner
 * guarantees once) but must not be fatal either. */
export interface Projection {
  readonly name: string;
  /** Stream categories (prefixes) this projection follows; revisions are checked per stream. */
  readonly streams: readonly string[];
  /** Its tables, emptied by a rebuild, in an order safe to truncate. */
  readonly tables: readonly string[];
  readonly schema: string;
  apply(tx: SqlQuery, event: DomainEvent, recorded: RecordedEvent): Promise<void>;
}
