/** Events are JSON; domain data carries money as bigint, written as a decimal string. */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v));
}
