import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { createKb, putPage, wiki } from './support';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

const TABLES: Record<string, string> = {
  knowledge_bases: 'SELECT * FROM knowledge_bases ORDER BY kb_key',
  kb_readers: 'SELECT * FROM kb_readers ORDER BY kb_key, account_id',
  kb_pages: 'SELECT *, search::text AS search FROM kb_pages ORDER BY kb_key, page_id',
  kb_links: 'SELECT * FROM kb_links ORDER BY kb_key, from_page, to_page',
};

async function snapshot() {
  const out: Record<string, unknown[]> = {};
  for (const [name, query] of Object.entries(TABLES)) out[name] = await t.db.sql.query(query);
  return out;
}

describe('knowledge projection', () => {
  it('rebuilt from the log equals the live tables', async () => {
    const a = await t.accountWithKey();
    const b = await t.accountWithKey();
    const c = await t.accountWithKey();
    await createKb(t, a.accountId, 'team-r', [b.accountId]);
    await createKb(t, b.accountId, 'team-s', [a.accountId, c.accountId]);
    expect((await t.admin('PATCH', `/accounts/${a.accountId}/kbs/team-r`, { title: 'Renamed', reader_account_ids: [b.accountId, c.accountId] })).statusCode).toBe(200);
    expect((await t.admin('PATCH', `/accounts/${b.accountId}/kbs/team-s`, { reader_account_ids: [] })).statusCode).toBe(200);

    for (let i = 0; i < 40; i++) {
      const owner = i % 3 === 0 ? b : a;
      const kb = i % 4 === 0 ? 'default' : owner === a ? 'team-r' : 'team-s';
      await putPage(t, owner.accountId, kb, `p-${i}`, {
        title: `Page ${i} about ${i % 2 ? 'rivers' : 'mountains'}`,
        summary: `summary ${i}`,
        tags: [`t${i % 5}`, 'all'],
        aliases: i % 6 === 0 ? [`alias ${i}`] : [],
        links: [`p-${i + 1}`, `p-${i + 3}`],
        body: `Body ${i}: see [[p-${i - 1}]] and [[p-${i}]] and [[nowhere-${i}|x]].`,
        confidence: i % 2 ? 'high' : null,
        needs_review: i % 7 === 0,
        source: i % 5 === 0 ? { r2_key: `src/${i}.md`, filename: `${i}.md`, locator: `line ${i}`, compiled_at: null, model: 'm' } : null,
      });
    }
    // Updates, unchanged re-puts and deletions.
    await putPage(t, a.accountId, 'team-r', 'p-1', { title: 'Page 1 rewritten', links: ['p-2'], body: 'no more body links' });
    await putPage(t, a.accountId, 'team-r', 'p-2', {
      title: 'Page 2 about mountains',
      summary: 'summary 2',
      tags: ['t2', 'all'],
      links: ['p-3', 'p-5'],
      body: 'Body 2: see [[p-1]] and [[p-2]] and [[nowhere-2|x]].',
    });
    expect((await t.admin('DELETE', `/accounts/${a.accountId}/kbs/team-r/pages/p-5`)).statusCode).toBe(200);
    expect((await t.admin('DELETE', `/accounts/${b.accountId}/kbs/default/pages/p-0`)).statusCode).toBe(200);
    await putPage(t, b.accountId, 'default', 'p-0', { title: 'Page 0 is back', body: '[[p-12]]' });

    await t.gateway.runner.catchUpToHead();
    const live = await snapshot();
    expect(live.knowledge_bases).toHaveLength(2);
    expect(live.kb_readers!.length).toBe(2);
    expect(live.kb_pages!.length).toBe(39);
    expect(live.kb_links!.length).toBeGreaterThan(60);
    expect((await wiki(t, c.key, '/search', { q: 'rivers', kb_id: 'team-r' })).json().total_hits).toBeGreaterThan(0);

    await t.gateway.runner.stop();
    await t.gateway.runner.rebuild('knowledge');
    expect(await snapshot()).toEqual(live);

    // The read side still answers the same after the rebuild.
    expect((await wiki(t, c.key, '/search', { q: 'rivers', kb_id: 'team-r' })).json().total_hits).toBeGreaterThan(0);
    expect((await wiki(t, b.key, '/pages/p-0')).json()).toMatchObject({ title: 'Page 0 is back', outgoing_links: [{ id: 'p-12', resolved: true, title: 'Page 12 about mountains' }] });
  });
});
