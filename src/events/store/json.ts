/** Events are JSON; domain data carries money as bigint, written as a decimal string. */
export function encodeJson(value: unknown): string {
  // The JSON form first, then the native serializer: JSON.stringify with a replacer calls
  // back into JavaScript for every value of the tree, which costs about twice as much.
  return JSON.stringify(toJsonValue(value));
}

/** Text Postgres' jsonb cannot hold: U+0000 and UTF-16 surrogates (paired ones are looked at again below). */
const UNSTORABLE = /[\u0000\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text as every event store keeps it: U+0000 and unpaired surrogates become U+FFFD. Postgres'
 * jsonb refuses both, and one such character (a model name a client made up, an upstream's error
 * message) would fail the whole append, with the other commands that share it.
 */
export function storableText(text: string): string {
  if (!UNSTORABLE.test(text)) return text;
  return text.replace(LONE_SURROGATE, '\ufffd').replaceAll('\u0000', '\ufffd');
}

/** Marks the objects `jsonForm` made (not enumerable: JSON, spreads and `for...in` never see it). */
const JSON_FORM = Symbol('json form');

/**
 * `toJsonValue`, remembered: an event's data is turned into its JSON form when its append is
 * checked (src/events/store/checked.ts) and again by the engine that writes it; the second time
 * costs nothing. The form must not be changed afterwards (no one changes an event's data).
 */
export function jsonForm(value: unknown): unknown {
  const form = toJsonValue(value);
  if (typeof form === 'object' && form !== null) Object.defineProperty(form, JSON_FORM, { value: true });
  return form;
}

/**
 * The value as JSON would give it back after a round trip: bigints as decimal strings, what
 * `toJSON` returns for objects that have it (a Date), no properties whose value JSON leaves out
 * (undefined, functions, symbols), and null in their place in arrays; null for NaN and the
 * infinities, 0 for -0; text as `storableText`. Appends are checked on this form (catalog's
 * `checkReadable`), so it must stay what a reader of the log gets back.
 */
export function toJsonValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (typeof value === 'object' && value !== null && (value as { [JSON_FORM]?: true })[JSON_FORM]) return value;
  // JSON has no NaN, Infinity or -0: JSON.stringify writes null and 0.
  if (typeof value === 'number') return Number.isFinite(value) ? value + 0 : null;
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return typeof value === 'function' || typeof value === 'symbol' ? undefined : value;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return toJsonValue((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value)) return value.map((item) => toJsonValue(item) ?? null);
  const copy: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const item = toJsonValue((value as Record<string, unknown>)[key]);
    if (item === undefined) continue;
    const name = storableText(key);
    // A key named __proto__ stays a key, as in the original (an assignment would set the prototype).
    if (name === '__proto__') Object.defineProperty(copy, name, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[name] = item;
  }
  return copy;
}
