import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inertCell } from '../../src/http/admin/logs';
import { CSV_COLUMNS } from '../../src/projections/call-log/queries';
import { startTestGateway, type TestGateway } from '../support/gateway';

// Issue 21, item 17: client text (a rejected model name, a key name) reaches the call-log export;
// a spreadsheet must not run it as a formula.

let t: TestGateway;
let base: string;
beforeAll(async () => {
  t = await startTestGateway();
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.gateway.app.server.address() as { port: number }).port}`;
});
afterAll(() => t.close());

/** The cells of one CSV line as written (quoted cells unquoted); enough for these rows. */
function cells(line: string): string[] {
  const out: string[] = [];
  const re = /("(?:[^"]|"")*"|[^,]*)(,|$)/g;
  for (let m = re.exec(line); m && m.index < line.length; m = re.exec(line)) {
    out.push(m[1]!.startsWith('"') ? m[1]!.slice(1, -1).replaceAll('""', '"') : m[1]!);
    if (m[2] === '') break;
  }
  return out;
}

describe('the call-log CSV export', () => {
  it('escapes text cells that a spreadsheet would read as formulas', async () => {
    const { accountId, key } = await t.accountWithKey({ name: '+SUM(1,2)' });
    const openai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
    const formulas = ['=HYPERLINK("http://evil.example","open")', '@SUM(A1:A9)', '-2+3', '\tcmd'];
    for (const model of formulas) await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] }).catch(() => {});
    await t.gateway.ledger.idle();
    await t.gateway.runner.catchUpToHead();

    const csv = await t.admin('GET', `/accounts/${accountId}/logs.csv`);
    expect(csv.statusCode).toBe(200);
    const [header, ...lines] = csv.body.trim().split('\n');
    expect(header).toBe(CSV_COLUMNS.join(','));
    const model = CSV_COLUMNS.indexOf('model');
    const keyName = CSV_COLUMNS.indexOf('key_name');
    const rows = lines.map(cells);
    expect(rows.map((r) => r[model]).sort()).toEqual(formulas.map((f) => `'${f}`).sort());
    for (const row of rows) {
      expect(row[keyName]).toBe("'+SUM(1,2)");
      for (const cell of row) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
    }
    // The JSON page shows the texts as they were stored.
    const page = (await t.admin('GET', `/accounts/${accountId}/logs`)).json() as { data: Array<{ model: string }> };
    expect(page.data.map((r) => r.model).sort()).toEqual([...formulas].sort());
  });

  it('leaves numbers alone, negative ones included', () => {
    expect(inertCell('-12.50')).toBe('-12.50');
    expect(inertCell('-3')).toBe('-3');
    expect(inertCell(-3)).toBe(-3);
    expect(inertCell('0.00')).toBe('0.00');
    expect(inertCell('-1e5')).toBe("'-1e5");
    expect(inertCell('\rx')).toBe("'\rx");
    expect(inertCell('gpt-4o')).toBe('gpt-4o');
    expect(inertCell(null)).toBe(null);
  });
});
