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
  // The last cell may be empty (a line ending with a comma): the loop ends on the match that ends the line.
  for (let m = re.exec(line); m; m = re.exec(line)) {
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

  it("has the spec's 21 columns exactly by default, and the adjustment columns only with include=adjustments", async () => {
    const { accountId, key } = await t.accountWithKey({ name: 'finance' });
    const openai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
    await openai.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }).catch(() => {});
    await t.gateway.ledger.idle();
    await t.gateway.runner.catchUpToHead();
    // The spec's "CSV export columns", written out here as a fixed-schema import expects them.
    const SPEC_HEADER =
      'id,created_at,key_name,key_prefix,model,status,error_code,error_message,input_tokens,output_tokens,cached_tokens,unit_count,unit_type,cost_usd,latency_ms,request_id,task_id,submitted_at,attempts_count,result_urls,result_expires_at';
    const plain = await t.admin('GET', `/accounts/${accountId}/logs.csv`);
    const [header, row] = plain.body.trim().split('\n');
    expect(header).toBe(SPEC_HEADER);
    expect(cells(row!)).toHaveLength(21);
    const extended = await t.admin('GET', `/accounts/${accountId}/logs.csv?include=adjustments`);
    const [extendedHeader, extendedRow] = extended.body.trim().split('\n');
    expect(extendedHeader).toBe(`${SPEC_HEADER},adjustment_usd,adjustment_reference`);
    expect(cells(extendedRow!).slice(21)).toEqual(['0.00', '']);
    const bad = await t.admin('GET', `/accounts/${accountId}/logs.csv?include=everything`);
    expect(bad.statusCode).toBe(400);
    // The OpenAPI document describes the option.
    const doc = (await t.gateway.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { get: { parameters: Array<{ name: string }> } }> };
    expect(doc.paths['/admin/v1/accounts/{id}/logs.csv']!.get.parameters.map((p) => p.name)).toContain('include');
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
