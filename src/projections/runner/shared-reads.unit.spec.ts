import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { START, comparePositions, type EventStore, type Position, type RecordedEvent } from '../../events/store/port';
import type { Projection } from '../projection';
import { SharedReads } from './shared-reads';

/** A log of `n` events of a stream nobody follows (nothing to decode), and the reads made of it. */
function log(n: number) {
  const events: RecordedEvent[] = Array.from({ length: n }, (_, i) => ({
    id: `e${i}`,
    streamId: 'other-1',
    revision: BigInt(i),
    position: { commit: BigInt(i), prepare: BigInt(i) },
    type: 'Something',
    data: {},
    metadata: {},
    createdAt: new Date(0),
  }));
  const reads: bigint[] = [];
  const store = {
    async readAll({ after = START, maxCount = 1000 }: { after?: Position; maxCount?: number }) {
      reads.push(after.commit);
      await sleep(1);
      return events.filter((e) => comparePositions(e.position, after) > 0).slice(0, maxCount);
    },
  } as unknown as EventStore;
  return { events, reads, store };
}

const projection = (name: string): Projection => ({ name, streams: ['wallet-'], tables: [], schema: '', applyBatch: async () => {} });

/** What advance does with a reader: batch after batch from where the last ended, until a short one. */
async function replay(reads: SharedReads, p: Projection, size: number, seen: number[][], pause = 0) {
  let from = START;
  try {
    for (;;) {
      const { events } = await reads.reader(p).read(from);
      seen.push(events.map((e) => Number(e.revision)));
      if (events.length > 0) from = events.at(-1)!.position;
      if (pause) await sleep(pause);
      if (events.length < size) return;
    }
  } finally {
    reads.leave(p);
  }
}

describe('SharedReads', () => {
  it('reads each batch of the log once for every projection, each getting every event in order', async () => {
    const { reads, store } = log(23);
    const [pa, pb] = [projection('a'), projection('b')];
    const shared = new SharedReads(store, 5, [pa, pb]);
    const a: number[][] = [];
    const b: number[][] = [];
    await Promise.all([replay(shared, pa, 5, a), replay(shared, pb, 5, b, 3)]);
    expect(a.flat()).toEqual([...Array(23).keys()]);
    expect(b).toEqual(a);
    // Five batches (the last one short), each read once, whichever projection asked first.
    expect(reads).toEqual([-1n, 4n, 9n, 14n, 19n]);
  });

  it('keeps the fastest projection at most two batches ahead of the slowest, until the slowest leaves', async () => {
    const { store } = log(100);
    const [slow, quick] = [projection('slow'), projection('fast')];
    const shared = new SharedReads(store, 5, [slow, quick]);
    const fast: number[][] = [];
    const fastDone = replay(shared, quick, 5, fast);
    const first = await shared.reader(slow).read(START);
    await sleep(30);
    // The slow one is on batch 0; the fast one got 0, 1 and 2 and waits for batch 3.
    expect(fast.length).toBe(3);
    await shared.reader(slow).read(first.events.at(-1)!.position);
    await sleep(30);
    expect(fast.length).toBe(4);
    shared.leave(slow);
    await fastDone;
    expect(fast.flat()).toEqual([...Array(100).keys()]);
  });

  it('leaves a projection that asks from anywhere else to read for itself, without holding the others back', async () => {
    const { reads, store } = log(30);
    const [moved, other] = [projection('moved'), projection('other')];
    const shared = new SharedReads(store, 5, [moved, other]);
    const others: number[][] = [];
    await shared.reader(moved).read(START);
    // Another instance applied batches of it meanwhile: it goes on from its checkpoint, not from batch 1.
    const alone = await shared.reader(moved).read({ commit: 17n, prepare: 17n });
    expect(alone.events.map((e) => Number(e.revision))).toEqual([18, 19, 20, 21, 22]);
    await replay(shared, other, 5, others);
    expect(others.flat()).toEqual([...Array(30).keys()]);
    expect(reads.filter((after) => after === 17n)).toHaveLength(1);
  });
});
