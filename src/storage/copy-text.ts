/**
 * Rows in COPY's text format (https://www.postgresql.org/docs/current/sql-copy.html, "Text Format"):
 * one line per row, values separated by tabs, `\N` for null, and a backslash, tab, newline or carriage
 * return inside a value written as a backslash sequence. Postgres reads each value with its column
 * type's input function, as it reads a parameter's text.
 */
export type CopyValue = string | number | bigint | null | undefined;

const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One value; undefined, like null, is `\N`. */
export function copyValue(value: CopyValue): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value !== 'string') return String(value);
  return SPECIAL.test(value) ? value.replace(SPECIALS, (c) => ESCAPES[c]!) : value;
}

/** A `text[]` value: its array literal, each element quoted (copyLine then escapes it as any value). */
export function copyTextArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
}

/** One row's line, values in the COPY's column order. */
export function copyLine(values: readonly CopyValue[]): string {
  let line = copyValue(values[0]);
  for (let i = 1; i < values.length; i++) line += `\t${copyValue(values[i])}`;
  return `${line}\n`;
}
