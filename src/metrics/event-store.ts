import { ConcurrencyError, storeWith, type EventStore, type NewEvent } from '../events/store/port';
import type { GatewayMetrics } from './metrics';

/** Commands whose events an append carries: the command handler writes each command's events
 * together, under its `command_id`, and a group commit puts several commands in one append. */
export function commandsIn(events: readonly NewEvent[]): number {
  let commands = 0;
  let last: unknown = undefined;
  for (const event of events) {
    const id = event.metadata?.command_id;
    if (commands === 0 || id !== last || id === undefined) commands += 1;
    last = id;
  }
  return commands;
}

/** The store with its appends timed and their group-commit batch sizes counted; everything else
 * passes through unchanged (a reset listener included). */
export function meteredStore(store: EventStore, metrics: GatewayMetrics): EventStore {
  return storeWith(store, {
    append(streamId, events, expected, options) {
      const started = performance.now();
      return store.append(streamId, events, expected, options).then(
        (result) => {
          metrics.appended((performance.now() - started) / 1000, commandsIn(events));
          return result;
        },
        (error: unknown) => {
          metrics.appendFailed(error instanceof ConcurrencyError);
          throw error;
        },
      );
    },
  });
}
