// What the client commands print: lists as aligned tables (the API's JSON with --json), and a server's
// error answer as one readable line on stderr (its JSON body with --json).

/** A column of a list: its heading and the row field it shows (a function for a computed one). */
export type Column = readonly [heading: string, field: string | ((row: Record<string, unknown>) => unknown)];

/** Unix seconds in a field named `at`, `…_at` or `…_until`, shown as UTC time to the second. */
function cell(field: string, value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'number' && (field === 'at' || field.endsWith('_at') || field.endsWith('_until')) && value > 1e8) return new Date(value * 1000).toISOString().slice(0, 19).replace('T', ' ') + 'Z';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  // One line per row, and no cell so long that the table stops being one.
  const text = String(value).replace(/\s+/g, ' ');
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** Rows as a table: a heading line, then one line per row, columns padded to their widest cell. */
export function table(rows: readonly Record<string, unknown>[], columns: readonly Column[]): string {
  const cells = rows.map((row) => columns.map(([, field]) => (typeof field === 'string' ? cell(field, row[field]) : cell('', field(row)))));
  const lines = [columns.map(([heading]) => heading.toUpperCase()), ...cells];
  const widths = columns.map((_, i) => Math.max(...lines.map((line) => line[i]!.length)));
  return lines.map((line) => line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

/** An error answer of the admin API (`{error: {code, message}}`) as one line: `HTTP 404 channel_not_found: no channel x …`. */
export function errorLine(status: number, body: string): string {
  let code = '';
  let message = body.trim();
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown; message?: unknown } };
    if (parsed.error && typeof parsed.error === 'object') {
      code = typeof parsed.error.code === 'string' ? parsed.error.code : '';
      message = typeof parsed.error.message === 'string' ? parsed.error.message : message;
    }
  } catch {
    // not JSON (a proxy's page): its text, on one line
  }
  const text = message.replace(/\s+/g, ' ').slice(0, 500);
  return `gateway: HTTP ${status}${code ? ` ${code}` : ''}${text && text !== code ? `: ${text}` : ''}`;
}

/** A server's error answer on stderr, exit status 1: a readable line, or its body as it came with --json. */
export function failed(response: { status: number; text: string }, json: boolean): void {
  process.stderr.write(`${json ? response.text.trim() : errorLine(response.status, response.text)}\n`);
  process.exitCode = 1;
}
