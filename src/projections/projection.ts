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
 * instead of a few statements per event (`writes` says how many rows one may take).
 * Applying an event twice must not be possible (the runner guarantees once) but must
 * not be fatal either. */
export interface Projection {
  readonly name: string;
  /** Stream categories (prefixes) this projection follows; revisions are checked per stream. */
  readonly streams: readonly string[];
  /** Its tables, emptied by a rebuild, in an order safe to truncate. */
  readonly tables: readonly string[];
  readonly schema: string;
  /** Indexes a rebuild drops while it loads the tables and builds again at the end (see SecondaryIndex). */
  readonly secondaryIndexes?: readonly SecondaryIndex[];
  /** `memory` is given only by a rebuild (see RebuildMemory); without it the projection reads
   * what it needs from its tables. */
  applyBatch(tx: SqlQuery, items: readonly ProjectedEvent[], writes?: BatchWrites, memory?: RebuildMemory): Promise<void>;
}

/**
 * An index that only serves reads, no constraint: the rows are right without it. Kept up to date row
 * by row, such an index costs a rebuild more than the rows themselves (each insert descends its
 * b-tree); built once after the load, it is one sort. So a rebuild drops it with the TRUNCATE and
 * builds it when the log is replayed. `schema` creates it too (IF NOT EXISTS): a rebuild that dies
 * before building it again leaves it to the next start's migration, and the tables stay right,
 * only slower to read, meanwhile.
 */
export interface SecondaryIndex {
  readonly name: string;
  /** CREATE INDEX IF NOT EXISTS …, part of the projection's schema. */
  readonly create: string;
  /** Statements that drop it, when more than DROP INDEX (a constraint's index). */
  readonly drop?: readonly string[];
}

/**
 * A column's UNIQUE constraint, dropped by a rebuild and built again as a unique index of the same
 * name: the same guarantee (and the same name in a violation), but one CREATE UNIQUE INDEX IF NOT
 * EXISTS, which the schema can run on every start. For a column whose values are unique already
 * where they come from (an event's id: the log's own constraint).
 */
export function uniqueIndex(table: string, column: string): SecondaryIndex {
  const name = `${table}_${column}_key`;
  return {
    name,
    create: `CREATE UNIQUE INDEX IF NOT EXISTS ${name} ON ${table} (${column});`,
    drop: [`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${name}`, `DROP INDEX IF EXISTS ${name}`],
  };
}

/** `on`: what follows ON in CREATE INDEX (the table, the columns, a WHERE). */
export function secondaryIndex(name: string, on: string): SecondaryIndex {
  return { name, create: `CREATE INDEX IF NOT EXISTS ${name} ON ${on};` };
}

/**
 * What a rebuild carries for one projection from one batch to the next, in place of what the projection
 * would read back from its own tables (running balances, open holds' keys). The rebuild starts it with
 * the tables empty, so it knows everything the tables hold. The runner hands it to a batch only while
 * every earlier batch of the rebuild was applied with it and committed: when a batch fails (it may have
 * changed the memory and then been rolled back) or another instance moved the projection, the memory is
 * dropped and the projection reads from its tables again, as the live runner does.
 */
export class RebuildMemory {
  private value: unknown;
  private started = false;

  /** The projection's memory, `start()` the first time. */
  of<T>(start: () => T): T {
    if (!this.started) {
      this.value = start();
      this.started = true;
    }
    return this.value as T;
  }
}

/** For projections that see few events: each event with its own statements, in order. */
export function oneAtATime(apply: (tx: SqlQuery, event: DomainEvent, recorded: RecordedEvent) => Promise<void>): Projection['applyBatch'] {
  return async (tx, items) => {
    for (const { event, recorded } of items) await apply(tx, event, recorded);
  };
}

/**
 * How a batch's rows go to the database. A statement of a few hundred rows keeps its backend busy
 * for milliseconds without a break, and whatever else needs that database core meanwhile (the next
 * call's hold append) waits behind it: the gateway's latency tail. Slices of a few dozen rows cost
 * about the same per row, but each is a round trip, and on a busy gateway a round trip waits for
 * its turn in the event loop: the runner would fall behind. So the runner has a batch that caught
 * up with the log (shorter than its read) written in slices while the gateway has time to spare,
 * and a full one (it is behind) or any batch of a busy gateway written a table a statement.
 */
export interface BatchWrites {
  readonly rowsPerStatement: number;
  /** A rebuild's load: the large tables' new rows go in with COPY (SqlQuery.copyFrom), several times
   * cheaper for the database than the same rows as a statement's parameters, and one long statement. */
  readonly copy?: boolean;
}

export const IN_SLICES: BatchWrites = { rowsPerStatement: 32 };
export const WHOLE: BatchWrites = { rowsPerStatement: Number.POSITIVE_INFINITY };
export const LOAD: BatchWrites = { rowsPerStatement: Number.POSITIVE_INFINITY, copy: true };

/** Writes rows in order, at most `writes.rowsPerStatement` a statement (nothing for no rows). */
export async function inSlices<T>(rows: readonly T[], writes: BatchWrites, write: (slice: readonly T[]) => Promise<unknown>): Promise<void> {
  const size = writes.rowsPerStatement;
  for (let i = 0; i < rows.length; i += size) await write(rows.length <= size ? rows : rows.slice(i, i + size));
}
