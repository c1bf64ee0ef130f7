import { isMap, isSet, type Map as PersistentMap, type Set as PersistentSet } from 'immutable';

/** An aggregate's state in a form `toEqual` compares by value: bigints tagged, persistent maps and
 * sets as sorted entries (their iteration order depends on how they were built). */
export function canonicalState(value: unknown): unknown {
  if (typeof value === 'bigint') return `${value}n`;
  if (isMap(value))
    return [...(value as PersistentMap<unknown, unknown>).entries()]
      .map(([k, v]) => [canonicalState(k), canonicalState(v)])
      .sort((a, b) => (JSON.stringify(a[0]) < JSON.stringify(b[0]) ? -1 : 1));
  if (isSet(value)) return [...(value as PersistentSet<unknown>).values()].map(canonicalState).sort();
  if (Array.isArray(value)) return value.map(canonicalState);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, canonicalState(v)]));
  return value;
}
