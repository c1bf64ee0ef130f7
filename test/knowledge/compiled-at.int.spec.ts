import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageFromMarkdown } from '../../src/commands/knowledge/markdown';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { wiki } from './support';

// Issue 21, item 15: the admin API's timestamps are Unix seconds (DESIGN.md); a page's
// `source.compiled_at` takes them, and RFC 3339 text from imported front matter as before.

let t: TestGateway;
let A: { accountId: string; key: string };
beforeAll(async () => {
  t = await startTestGateway();
  A = await t.accountWithKey();
});
afterAll(() => t.close());

const put = (id: string, compiledAt: unknown) =>
  t.admin('PUT', `/accounts/${A.accountId}/kbs/default/pages/${id}`, { title: id, body: 'text', source: { r2_key: `src/${id}.md`, compiled_at: compiledAt } });

describe('source.compiled_at', () => {
  it('takes Unix seconds and stores them as RFC 3339 UTC', async () => {
    expect((await put('unix', 1_700_000_000)).statusCode).toBe(201);
    const page = (await wiki(t, A.key, '/pages/unix')).json();
    expect(page.source.compiled_at).toBe('2023-11-14T22:13:20Z');
  });

  it('keeps RFC 3339 text as written, and null', async () => {
    expect((await put('text', '2026-01-01T00:00:00+02:00')).statusCode).toBe(201);
    expect((await wiki(t, A.key, '/pages/text')).json().source.compiled_at).toBe('2026-01-01T00:00:00+02:00');
    expect((await put('none', null)).statusCode).toBe(201);
    expect((await wiki(t, A.key, '/pages/none')).json().source.compiled_at).toBeNull();
  });

  it('refuses numbers that are not Unix seconds', async () => {
    for (const bad of [-1, 1.5, 253_402_300_800]) {
      const response = await put('bad', bad);
      expect(response.statusCode).toBe(400);
      expect(response.json().error.message).toContain('compiled_at');
    }
  });

  it('reads a number in front matter as Unix seconds too', () => {
    const page = pageFromMarkdown('n.md', '---\nsource: {r2_key: raw/n.pdf, compiled_at: 1700000000}\n---\n# N\n', null);
    expect(page.page.source?.compiled_at).toBe('2023-11-14T22:13:20Z');
    const text = pageFromMarkdown('t.md', '---\nsource: {r2_key: raw/t.pdf, compiled_at: "2026-01-01"}\n---\n# T\n', null);
    expect(text.page.source?.compiled_at).toBe('2026-01-01');
  });
});
