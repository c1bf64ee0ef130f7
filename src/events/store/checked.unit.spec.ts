import { describe, expect, it } from 'vitest';
import { UnwritableEventError } from '../catalog';
import { checkedStore } from './checked';
import { toJsonValue } from './json';
import type { EventStore, NewEvent } from './port';

/** Any engine (EventStoreDB included): the check must refuse before the engine is called at all. */
function engine() {
  const appended: NewEvent[][] = [];
  const store: EventStore = {
    engine: 'eventstoredb',
    async append(_streamId, events) {
      appended.push([...events]);
      return { nextRevision: BigInt(events.length - 1), position: { commit: 1n, prepare: 1n }, duplicate: false };
    },
    readStream: async () => [],
    readAll: async () => [],
    headPosition: async () => ({ commit: -1n, prepare: -1n }),
    follow: () => (async function* () {})(),
    close: async () => {},
  };
  return { store, appended };
}

const granted = (amount: unknown, at: unknown = 1_700_000_000): NewEvent => ({
  id: '00000000-0000-4000-8000-000000000001',
  type: 'CreditGranted',
  data: { grant_id: 'g', amount, reason: 'test', at },
});

describe('checkedStore', () => {
  it('passes an event the catalog reads back to the engine, in the JSON form it checked (which the engine need not convert again)', async () => {
    const { store, appended } = engine();
    const event = granted(5n);
    await checkedStore(store).append('wallet-a', [event], 'any');
    expect(appended).toEqual([[{ ...event, data: { grant_id: 'g', amount: '5', reason: 'test', at: 1_700_000_000 } }]]);
    expect(toJsonValue(appended[0]![0]!.data)).toBe(appended[0]![0]!.data);
  });

  it('refuses, without calling the engine, an append with any event the catalog could not read back', async () => {
    const { store, appended } = engine();
    const checked = checkedStore(store);
    const refusals: Array<[NewEvent, RegExp]> = [
      [granted(5n, 1.5), /\bat: /],
      [granted(5n, 1e20), /\bat: /],
      [granted(2n ** 63n), /amount: an amount beyond the 64-bit range/],
      [{ ...granted(5n), type: 'NoSuchEvent' }, /unknown event type NoSuchEvent/],
      [{ ...granted(5n), data: { grant_id: 'g' } }, /amount: /],
    ];
    for (const [event, reason] of refusals) {
      const append = checked.append('wallet-a', [granted(1n), event], 'any');
      await expect(append).rejects.toBeInstanceOf(UnwritableEventError);
      await expect(append).rejects.toThrow(reason);
      await expect(append).rejects.toMatchObject({ streamId: 'wallet-a', type: event.type });
    }
    expect(appended).toEqual([]);
  });

  it("tells the caches above it of the engine's resets (the command handler drops its folded states on them)", () => {
    const { store } = engine();
    const listeners: Array<() => void> = [];
    const resettable: EventStore = { ...store, onReset: (listener) => (listeners.push(listener), () => {}) };
    let told = 0;
    checkedStore(resettable).onReset?.(() => told++);
    listeners.forEach((listener) => listener());
    expect(told).toBe(1);
    // An engine that never loses an acknowledged append has no onReset, and neither has its checked store.
    expect(checkedStore(store).onReset).toBeUndefined();
  });
});
