import { readableForm } from '../catalog';
import type { EventStore } from './port';

/**
 * The event store as the gateway uses it, whatever its engine: an append whose events the catalog
 * could not read back is refused before the engine sees it (UnwritableEventError), so the log never
 * holds an event that would fail every later load of its stream. The check is the read path's own
 * decode, on the data as it comes back from storage (`readableForm`).
 */
export function checkedStore(store: EventStore): EventStore {
  return {
    engine: store.engine,
    append(streamId, events, expected, options) {
      let checked;
      try {
        checked = readableForm(streamId, events);
      } catch (error) {
        return Promise.reject(error);
      }
      // The JSON form goes on: the engine's own conversion of it costs nothing (json.ts, jsonForm).
      return store.append(streamId, checked, expected, options);
    },
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    follow: (options) => store.follow(options),
    // The command handler's caches listen here: a wrapper without it would leave them folded from
    // events a database crash lost.
    ...(store.onReset ? { onReset: (listener: () => void) => store.onReset!(listener) } : {}),
    close: () => store.close(),
  };
}
