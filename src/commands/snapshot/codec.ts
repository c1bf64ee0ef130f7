import { createHash } from 'node:crypto';
import { isMap, isSet, Map as PersistentMap, Set as PersistentSet } from 'immutable';

/**
 * An aggregate's state as a snapshot holds it: JSON, with the few kinds of value our states use
 * beyond JSON tagged by one-key objects (`$b` a bigint, `$m` a persistent map's entries, `$s` a
 * persistent set's values). Generic on purpose: a field added to a state is snapshotted without
 * anyone writing code for it, and `stateVersion` notices it.
 */
export function encodeState(value: unknown): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return { $b: value.toString() };
  if (isMap(value)) return { $m: [...(value as PersistentMap<unknown, unknown>).entries()].map(([k, v]) => [encodeState(k), encodeState(v)]) };
  if (isSet(value)) return { $s: [...(value as PersistentSet<unknown>).values()].map(encodeState) };
  if (Array.isArray(value)) return value.map(encodeState);
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value)) {
      if (key.startsWith('$')) throw new Error(`a state field may not start with "$": ${key}`);
      if (field !== undefined) out[key] = encodeState(field);
    }
    return out;
  }
  throw new Error(`a state cannot hold ${typeof value === 'object' ? Object.prototype.toString.call(value) : typeof value} in a snapshot`);
}

export function decodeState(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(decodeState);
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1) {
    if (keys[0] === '$b') return BigInt(record.$b as string);
    if (keys[0] === '$m') return PersistentMap((record.$m as Array<[unknown, unknown]>).map(([k, v]) => [decodeState(k), decodeState(v)]));
    if (keys[0] === '$s') return PersistentSet((record.$s as unknown[]).map(decodeState));
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key] = decodeState(record[key]);
  return out;
}

/**
 * The version a snapshot of this aggregate is written with and must be read with: the aggregate's
 * own number (raised by hand when a type inside its state changes meaning or shape) and a digest of
 * its initial state's shape (so that a field added to or removed from the state voids every older
 * snapshot without anyone remembering to raise the number).
 */
export function stateVersion(aggregate: string, version: number, initialState: unknown): string {
  const digest = createHash('sha256').update(JSON.stringify(shapeOf(initialState))).digest('hex').slice(0, 16);
  return `${aggregate}.${version}.${digest}`;
}

function shapeOf(value: unknown): unknown {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return 'bigint';
  if (isMap(value)) return 'map';
  if (isSet(value)) return 'set';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as object)
        .sort()
        .map((key) => [key, shapeOf((value as Record<string, unknown>)[key])]),
    );
  }
  return typeof value;
}
