import { UnreadableEventError, decodeRecorded } from '../../events/catalog';
import { comparePositions, type EventStore, type Position, type RecordedEvent } from '../../events/store/port';
import type { ProjectedEvent, Projection } from '../projection';

/** A decoded event, or why it cannot be decoded; each event of a batch decoded once for all projections. */
export type Decoded = Map<RecordedEvent, ProjectedEvent | UnreadableEventError>;

/** A batch of the log and what of it has been decoded. */
export interface Read {
  readonly events: readonly RecordedEvent[];
  readonly decoded: Decoded;
  /** A rebuild's: each of its projections' events of the batch, sorted out once for all of them. */
  readonly followed?: ReadonlyMap<Projection, readonly RecordedEvent[]>;
}

/** Where one projection's replay gets its batches (see SharedReads.reader). */
export interface Reader {
  read(from: Position): Promise<Read>;
}

/** How many batches the fastest projection of a rebuild may be ahead of the slowest. */
const LOOKAHEAD = 2;

/**
 * One read of the log for every projection a rebuild replays, each projection going through it at its own
 * pace: a projection whose batch is committed starts on the next while the others' rows are still with the
 * database, so this process builds rows while the database writes them, without a pause at the end of each
 * batch for the slowest. Each batch is read once (the next one read meanwhile, on another connection) and
 * decoded once as it arrives, while this process would otherwise wait. The fastest projection waits when it
 * is LOOKAHEAD batches ahead of the slowest, so that at most a few batches are held in memory.
 *
 * A projection asks for the batch after the one it applied; one that asks for anything else (another
 * instance moved its checkpoint) is left on its own and reads for itself, as the live runner does.
 */
export class SharedReads {
  /** Batch k of this pass (read after batch k-1's last event), dropped once every projection is past it. */
  private readonly batches = new Map<number, Promise<Read>>();
  private first: Position | null = null;
  /** The batch each projection still in the shared pass is on, and where its last batch ended. */
  private readonly cursors = new Map<Projection, { at: number; to: Position | null }>();
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly store: EventStore,
    private readonly size: number,
    private readonly projections: readonly Projection[],
  ) {
    for (const p of projections) this.cursors.set(p, { at: 0, to: null });
  }

  reader(projection: Projection): Reader {
    return { read: (from) => this.read(projection, from) };
  }

  /** The projection is done with the pass (replayed what there was, or failed): nobody waits for it. */
  leave(projection: Projection): void {
    this.cursors.delete(projection);
    this.moved();
  }

  private async read(projection: Projection, from: Position): Promise<Read> {
    const cursor = this.cursors.get(projection);
    const expected = cursor === undefined ? null : cursor.at === 0 ? (this.first ?? from) : cursor.to;
    if (cursor === undefined || expected === null || comparePositions(expected, from) !== 0) {
      this.leave(projection);
      return this.readDecoded(from);
    }
    this.first ??= from;
    while (cursor.at >= this.slowest() + LOOKAHEAD) await new Promise<void>((resolve) => this.waiting.add(resolve));
    const read = await this.batch(cursor.at);
    cursor.at += 1;
    cursor.to = read.events.at(-1)?.position ?? null;
    this.moved();
    return read;
  }

  /** Batch k, and the next one asked for meanwhile. */
  private batch(k: number): Promise<Read> {
    for (let i = this.batches.size === 0 ? 0 : Math.min(...this.batches.keys()); i <= k + 1; i++) {
      if (this.batches.has(i)) continue;
      const previous = this.batches.get(i - 1);
      const read =
        i === 0
          ? this.readDecoded(this.first!)
          : previous!.then(({ events }) => (events.length < this.size ? { events: [], decoded: new Map() } : this.readDecoded(events.at(-1)!.position)));
      // Asked for ahead of time: if nobody gets to it, its failure is nobody's.
      read.catch(() => {});
      this.batches.set(i, read);
    }
    return this.batches.get(k)!;
  }

  private async readDecoded(from: Position): Promise<Read> {
    const events = await this.store.readAll({ after: from, maxCount: this.size });
    const decoded: Decoded = new Map();
    const followed = followedEvents(this.projections, events, (event) => decode(event, decoded));
    return { events, decoded, followed };
  }

  private slowest(): number {
    let slowest = Number.POSITIVE_INFINITY;
    for (const { at } of this.cursors.values()) slowest = Math.min(slowest, at);
    return slowest;
  }

  /** A projection moved on or left: batches behind everybody are dropped, and those waiting look again. */
  private moved(): void {
    const slowest = this.slowest();
    // The batch before the slowest's is kept: the next ones are read after its last event.
    for (const k of this.batches.keys()) if (k < slowest - 1) this.batches.delete(k);
    for (const wake of this.waiting) wake();
    this.waiting.clear();
  }
}

/** The batch read for one pass of the live runner: decoded by the projections as they need it. */
export async function readBatch(store: EventStore, from: Position, size: number): Promise<Read> {
  return { events: await store.readAll({ after: from, maxCount: size }), decoded: new Map() };
}

/** The event decoded, once for every projection that reads it. */
export function decode(recorded: RecordedEvent, decoded: Decoded): ProjectedEvent | UnreadableEventError {
  let item = decoded.get(recorded);
  if (!item) {
    try {
      item = { event: decodeRecorded(recorded), recorded };
    } catch (error) {
      if (!(error instanceof UnreadableEventError)) throw error;
      item = error;
    }
    decoded.set(recorded, item);
  }
  return item;
}

/** Each projection's events of the batch, in log order: who follows a stream is asked once per stream.
 * `each` is called once for each event that some projection follows. */
export function followedEvents(
  projections: readonly Projection[],
  batch: readonly RecordedEvent[],
  each?: (event: RecordedEvent) => void,
): Map<Projection, RecordedEvent[]> {
  const followed = new Map(projections.map((p) => [p, [] as RecordedEvent[]]));
  const followers = new Map<string, RecordedEvent[][]>();
  for (const event of batch) {
    let lists = followers.get(event.streamId);
    if (lists === undefined) {
      lists = projections.filter((p) => p.streams.some((prefix) => event.streamId.startsWith(prefix))).map((p) => followed.get(p)!);
      followers.set(event.streamId, lists);
    }
    if (lists.length === 0) continue;
    for (const list of lists) list.push(event);
    each?.(event);
  }
  return followed;
}
