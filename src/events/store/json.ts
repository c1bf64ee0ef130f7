/** Events are JSON; domain data carries money as bigint, written as a decimal string. */
export function encodeJson(value: unknown): string {
  // A copy with the bigints as strings, then the native serializer: JSON.stringify with a
  // replacer calls back into JavaScript for every value of the tree, which costs about twice as much.
  return JSON.stringify(jsonValue(value));
}

function jsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(jsonValue);
  // toJSON (a Date) decides its own form, as JSON.stringify would let it.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  const copy: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const item = jsonValue((value as Record<string, unknown>)[key]);
    // A key named __proto__ stays a key, as in the original (an assignment would set the prototype).
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy;
}
