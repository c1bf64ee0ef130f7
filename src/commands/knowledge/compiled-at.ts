/** The last second of year 9999: a larger Unix time has no four-digit-year RFC 3339 form. */
export const LAST_UNIX_SECOND = 253_402_300_799;

/**
 * A page source's `compiled_at` as it is stored and shown: text. The admin API's timestamps are
 * Unix seconds (DESIGN.md), so a number is taken as one and written as RFC 3339 UTC
 * (`1700000000` -> `2023-11-14T22:13:20Z`); a text (RFC 3339 from imported front matter) is kept
 * as written.
 */
export function compiledAtText(value: number | string): string {
  if (typeof value === 'string') return value;
  return new Date(value * 1000).toISOString().replace('.000Z', 'Z');
}
