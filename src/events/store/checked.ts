import { readableForm } from '../catalog';
import { storeWith, type EventStore } from './port';

/**
 * The event store as the gateway uses it, whatever its engine: an append whose events the catalog
 * could not read back is refused before the engine sees it (UnwritableEventError), so the log never
 * holds an event that would fail every later load of its stream. The check is the read path's own
 * decode, on the data as it comes back from storage (`readableForm`).
 */
export function checkedStore(store: EventStore): EventStore {
  return storeWith(store, {
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
  });
}
