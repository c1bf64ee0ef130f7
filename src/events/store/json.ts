/** Events are JSON; domain data carries money as bigint, written as a decimal string. */
export function encodeJson(value: unknown): string {
  // The JSON form first, then the native serializer: JSON.stringify with a replacer calls
  // back into JavaScript for every value of the tree, which costs about twice as much.
  return JSON.stringify(toJsonValue(value));
}

/**
 * The value as JSON would give it back after a round trip: bigints as decimal strings, what
 * `toJSON` returns for objects that have it (a Date), no properties whose value JSON leaves out
 * (undefined, functions, symbols), and null in their place in arrays.
 */
export function toJsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return typeof value === 'function' || typeof value === 'symbol' ? undefined : value;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return toJsonValue((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value)) return value.map((item) => toJsonValue(item) ?? null);
  const copy: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const item = toJsonValue((value as Record<string, unknown>)[key]);
    if (item === undefined) continue;
    // A key named __proto__ stays a key, as in the original (an assignment would set the prototype).
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy;
}
