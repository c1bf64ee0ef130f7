import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_MESSAGES } from '../../src/http/plugins/auth';
import { parseUsd } from '../../src/money/usd';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { byId, createKb, pathOf, putObject, putPage, wiki } from './support';

let t: TestGateway;
let clock = 1_800_000_000;

/** Account A: personal base with the fixture pages and team base `team-a` (reader B). */
let A: { accountId: string; key: string };
let B: { accountId: string; key: string };
let C: { accountId: string; key: string };

const LONG_BODY = 'abcdefghi '.repeat(900); // 9000 characters
const ALPHA_SOURCE = randomBytes(3000);
const BULK = 60;

beforeAll(async () => {
  t = await startTestGateway({ now: () => clock });
  A = await t.accountWithKey();
  B = await t.accountWithKey();
  C = await t.accountWithKey();

  await putObject(t, 'src/alpha.pdf', ALPHA_SOURCE, 'application/pdf');
  await putPage(t, A.accountId, 'default', 'alpha', {
    title: 'Quantum Entanglement Primer',
    summary: 'A short primer.',
    tags: ['physics', 'quantum'],
    aliases: ['QE primer'],
    links: ['beta', 'missing-page'],
    body: 'This page links to [[gamma]] inline.\n\nIt talks about spooky action.',
    confidence: 'high',
    needs_review: true,
    source: { r2_key: 'src/alpha.pdf', filename: 'alpha.pdf', locator: 'p. 3', compiled_at: '2026-01-01T00:00:00Z', model: 'compiler-1' },
  });
  await putPage(t, A.accountId, 'default', 'beta', {
    title: 'Beta notes',
    summary: 'Unrelated title.',
    body: 'Entanglement is mentioned here in the body only. Entanglement again.',
  });
  await putPage(t, A.accountId, 'default', 'gamma', {
    title: 'Gamma',
    tags: ['physics'],
    body: 'Back to [[alpha|the primer]] and [[delta#section]].',
  });
  await putPage(t, A.accountId, 'default', 'long', { title: 'Long page', body: LONG_BODY });
  for (let i = 0; i < BULK; i++) {
    const n = String(i).padStart(2, '0');
    await putPage(t, A.accountId, 'default', `bulk-${n}`, { title: `Bulk page ${n}`, tags: ['bulk'], body: `zebra marker for paging, number ${n}` });
  }

  await createKb(t, A.accountId, 'team-a', [B.accountId]);
  await putPage(t, A.accountId, 'team-a', 'team-page', { title: 'Team secret roadmap', tags: ['roadmap'], body: 'the roadmap lives here' });
  // Same id as a personal page, different content: kb_id picks which one is read.
  await putPage(t, A.accountId, 'team-a', 'alpha', { title: 'Team alpha', body: 'team copy' });

  await putPage(t, B.accountId, 'default', 'b-note', { title: 'B personal note', body: 'roadmap of B' });
  await putPage(t, C.accountId, 'default', 'c-note', { title: 'C personal note', body: 'nothing shared' });
});
afterAll(() => t.close());

describe('GET /api/v1/ext/wiki/search', () => {
  it('returns {query, total_hits, offset, returned, has_more, results[]} with the hit fields', async () => {
    const response = await wiki(t, A.key, '/search', { q: 'spooky' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(['has_more', 'offset', 'query', 'results', 'returned', 'total_hits']);
    expect(body).toMatchObject({ query: 'spooky', total_hits: 1, offset: 0, returned: 1, has_more: false });
    const [hit] = body.results;
    expect(hit).toMatchObject({
      id: 'alpha',
      title: 'Quantum Entanglement Primer',
      summary: 'A short primer.',
      tags: ['physics', 'quantum'],
      confidence: 'high',
      needs_review: true,
    });
    expect(typeof hit.score).toBe('number');
    expect(hit.score).toBeGreaterThan(0);
    expect(typeof hit.snippet).toBe('string');
    expect(hit.snippet.toLowerCase()).toContain('spooky');
    // Light hits: no body.
    expect(hit).not.toHaveProperty('body');
  });

  it('uses kb_id=default when kb_id is absent', async () => {
    const implicit = await wiki(t, A.key, '/search', { q: 'zebra', limit: 50 });
    const explicit = await wiki(t, A.key, '/search', { q: 'zebra', limit: 50, kb_id: 'default' });
    expect(implicit.statusCode).toBe(200);
    expect(implicit.json()).toEqual(explicit.json());
    // The team base is not searched unless asked for.
    expect((await wiki(t, A.key, '/search', { q: 'roadmap' })).json().total_hits).toBe(0);
    expect((await wiki(t, A.key, '/search', { q: 'roadmap', kb_id: 'team-a' })).json().results.map((h: { id: string }) => h.id)).toEqual(['team-page']);
  });

  it('pages: limit default 20, max 50 (80 gives 50), offset, has_more, total_hits', async () => {
    const first = (await wiki(t, A.key, '/search', { q: 'zebra' })).json();
    expect(first).toMatchObject({ total_hits: BULK, offset: 0, returned: 20, has_more: true });
    expect(first.results).toHaveLength(20);

    const capped = (await wiki(t, A.key, '/search', { q: 'zebra', limit: 80 })).json();
    expect(capped).toMatchObject({ total_hits: BULK, offset: 0, returned: 50, has_more: true });
    expect(capped.results).toHaveLength(50);

    const rest = (await wiki(t, A.key, '/search', { q: 'zebra', limit: 50, offset: 50 })).json();
    expect(rest).toMatchObject({ total_hits: BULK, offset: 50, returned: 10, has_more: false });
    const all = [...capped.results, ...rest.results].map((h: { id: string }) => h.id);
    expect(new Set(all).size).toBe(BULK);

    const middle = (await wiki(t, A.key, '/search', { q: 'zebra', limit: 7, offset: 20 })).json();
    expect(middle).toMatchObject({ total_hits: BULK, offset: 20, returned: 7, has_more: true });
    expect(middle.results.map((h: { id: string }) => h.id)).toEqual(all.slice(20, 27));

    const past = (await wiki(t, A.key, '/search', { q: 'zebra', offset: 100 })).json();
    expect(past).toMatchObject({ total_hits: BULK, offset: 100, returned: 0, has_more: false, results: [] });

    const exact = (await wiki(t, A.key, '/search', { q: 'zebra', limit: 10, offset: 50 })).json();
    expect(exact).toMatchObject({ returned: 10, has_more: false });
  });

  it('ranks a title match above a body-only match', async () => {
    const body = (await wiki(t, A.key, '/search', { q: 'entanglement' })).json();
    expect(body.results.map((h: { id: string }) => h.id)).toEqual(['alpha', 'beta']);
    expect(body.results[0].score).toBeGreaterThan(body.results[1].score);
    // Aliases weigh like the title.
    const alias = (await wiki(t, A.key, '/search', { q: 'QE' })).json();
    expect(alias.results.map((h: { id: string }) => h.id)).toEqual(['alpha']);
    // Tags are searchable too.
    const tag = (await wiki(t, A.key, '/search', { q: 'quantum physics' })).json();
    expect(tag.results.map((h: { id: string }) => h.id)).toContain('alpha');
  });

  it('requires q', async () => {
    const response = await wiki(t, A.key, '/search');
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('invalid_request');
  });
});

describe('GET /api/v1/ext/wiki/pages?ids=', () => {
  it('returns at most 25 pages (extra ids silently dropped), in the order asked', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `bulk-${String(i).padStart(2, '0')}`);
    const response = await wiki(t, A.key, '/pages', { ids: ids.join(',') });
    expect(response.statusCode).toBe(200);
    const pages = response.json().pages as Array<{ id: string }>;
    expect(pages.map((p) => p.id)).toEqual(ids.slice(0, 25));
  });

  it('truncates bodies to 4000 characters with body_truncated', async () => {
    const response = await wiki(t, A.key, '/pages', { ids: 'long,alpha' });
    expect(response.statusCode).toBe(200);
    const [long, alpha] = response.json().pages;
    expect(long.id).toBe('long');
    expect(long.body).toHaveLength(4000);
    expect(long.body).toBe(LONG_BODY.slice(0, 4000));
    expect(long.body_truncated).toBe(true);
    expect(alpha.id).toBe('alpha');
    expect(alpha.body_truncated).toBe(false);
    expect(alpha.body).toBe('This page links to [[gamma]] inline.\n\nIt talks about spooky action.');
    expect(alpha).toMatchObject({ title: 'Quantum Entanglement Primer', tags: ['physics', 'quantum'] });
  });

  it('leaves out missing ids and gives 400 invalid_request for empty ids', async () => {
    const mixed = (await wiki(t, A.key, '/pages', { ids: 'nope,gamma' })).json();
    expect(mixed.pages.map((p: { id: string }) => p.id)).toEqual(['gamma']);
    for (const query of [{}, { ids: '' }, { ids: ',' }, { ids: ' , ,' }] as Array<Record<string, string>>) {
      const response = await wiki(t, A.key, '/pages', query);
      expect(response.statusCode, JSON.stringify(query)).toBe(400);
      expect(response.json().error.code).toBe('invalid_request');
    }
  });
});

describe('GET /api/v1/ext/wiki/pages/{id}', () => {
  it('returns the full page with every field of the spec', async () => {
    const response = await wiki(t, A.key, '/pages/alpha');
    expect(response.statusCode).toBe(200);
    const page = response.json();
    expect(page).toMatchObject({
      id: 'alpha',
      kb_id: 'default',
      title: 'Quantum Entanglement Primer',
      summary: 'A short primer.',
      tags: ['physics', 'quantum'],
      aliases: ['QE primer'],
      links: ['beta', 'missing-page'],
      body: 'This page links to [[gamma]] inline.\n\nIt talks about spooky action.',
      confidence: 'high',
      needs_review: true,
      source: { r2_key: 'src/alpha.pdf', filename: 'alpha.pdf', locator: 'p. 3', compiled_at: '2026-01-01T00:00:00Z', model: 'compiler-1' },
    });
    // Links from the `links` field and from [[id]] in the body; resolved ones carry the title.
    expect(byId(page.outgoing_links)).toEqual([
      { id: 'beta', resolved: true, title: 'Beta notes' },
      { id: 'gamma', resolved: true, title: 'Gamma' },
      { id: 'missing-page', resolved: false, title: null },
    ]);
    // The full page is not truncated.
    const long = (await wiki(t, A.key, '/pages/long')).json();
    expect(long.body).toBe(LONG_BODY);
  });

  it('resolves [[id|label]] and [[id#section]] links, and a link once its target exists', async () => {
    const gamma = (await wiki(t, A.key, '/pages/gamma')).json();
    expect(byId(gamma.outgoing_links)).toEqual([
      { id: 'alpha', resolved: true, title: 'Quantum Entanglement Primer' },
      { id: 'delta', resolved: false, title: null },
    ]);
    await putPage(t, A.accountId, 'default', 'delta', { title: 'Delta arrives' });
    const after = (await wiki(t, A.key, '/pages/gamma')).json();
    expect(byId(after.outgoing_links)).toEqual([
      { id: 'alpha', resolved: true, title: 'Quantum Entanglement Primer' },
      { id: 'delta', resolved: true, title: 'Delta arrives' },
    ]);
  });

  it('reads the page of the base named by kb_id', async () => {
    const team = await wiki(t, A.key, '/pages/alpha', { kb_id: 'team-a' });
    expect(team.statusCode).toBe(200);
    expect(team.json()).toMatchObject({ id: 'alpha', kb_id: 'team-a', title: 'Team alpha', body: 'team copy', outgoing_links: [] });
  });
});

describe('GET /api/v1/ext/wiki/pages/{id}/backlinks', () => {
  it('lists pages linking to the page, from the links field and from [[id]] in bodies', async () => {
    const toGamma = await wiki(t, A.key, '/pages/gamma/backlinks');
    expect(toGamma.statusCode).toBe(200);
    expect(toGamma.json().backlinks.map((p: { id: string }) => p.id)).toEqual(['alpha']); // body link
    expect(toGamma.json().backlinks[0]).toMatchObject({ id: 'alpha', title: 'Quantum Entanglement Primer' });
    const toBeta = (await wiki(t, A.key, '/pages/beta/backlinks')).json();
    expect(toBeta.backlinks.map((p: { id: string }) => p.id)).toEqual(['alpha']); // links field
    const toAlpha = (await wiki(t, A.key, '/pages/alpha/backlinks')).json();
    expect(toAlpha.backlinks.map((p: { id: string }) => p.id)).toEqual(['gamma']); // [[alpha|label]]
    const toLong = (await wiki(t, A.key, '/pages/long/backlinks')).json();
    expect(toLong.backlinks).toEqual([]);
  });
});

describe('GET /api/v1/ext/wiki/tags and /tags/{tag}', () => {
  it('lists tags with counts, and the pages under a tag', async () => {
    const response = await wiki(t, A.key, '/tags');
    expect(response.statusCode).toBe(200);
    const tags = response.json().tags as Array<{ tag: string; count: number }>;
    expect(tags).toEqual(
      expect.arrayContaining([
        { tag: 'bulk', count: BULK },
        { tag: 'physics', count: 2 },
        { tag: 'quantum', count: 1 },
      ]),
    );
    expect(tags).toHaveLength(3);
    const team = (await wiki(t, A.key, '/tags', { kb_id: 'team-a' })).json();
    expect(team.tags).toEqual([{ tag: 'roadmap', count: 1 }]);

    const physics = await wiki(t, A.key, '/tags/physics');
    expect(physics.statusCode).toBe(200);
    expect(physics.json().pages.map((p: { id: string }) => p.id).sort()).toEqual(['alpha', 'gamma']);
    expect(physics.json().pages.find((p: { id: string }) => p.id === 'alpha')).toMatchObject({ title: 'Quantum Entanglement Primer', tags: ['physics', 'quantum'] });
    expect((await wiki(t, A.key, '/tags/roadmap')).json().pages).toEqual([]);
    expect((await wiki(t, A.key, '/tags/roadmap', { kb_id: 'team-a' })).json().pages.map((p: { id: string }) => p.id)).toEqual(['team-page']);
  });
});

describe('GET /api/v1/ext/wiki/pages/{id}/source', () => {
  it('returns {r2_key, filename, locator, url, url_ttl_secs: 3600}; the url downloads the stored bytes for an hour', async () => {
    const response = await wiki(t, A.key, '/pages/alpha/source');
    expect(response.statusCode).toBe(200);
    const link = response.json();
    expect(Object.keys(link).sort()).toEqual(['filename', 'locator', 'r2_key', 'url', 'url_ttl_secs']);
    expect(link).toMatchObject({ r2_key: 'src/alpha.pdf', filename: 'alpha.pdf', locator: 'p. 3', url_ttl_secs: 3600 });

    // No API key needed: the signature is the credential.
    const download = await t.gateway.app.inject({ method: 'GET', url: pathOf(link.url) });
    expect(download.statusCode).toBe(200);
    expect(Buffer.compare(download.rawPayload, ALPHA_SOURCE)).toBe(0);
    expect(download.headers['content-type']).toBe('application/pdf');

    // A tampered signature or expiry does not work.
    const url = new URL(link.url);
    const signature = url.searchParams.get('signature')!;
    const tampered = new URL(url);
    tampered.searchParams.set('signature', (signature[0] === 'a' ? 'b' : 'a') + signature.slice(1));
    expect((await t.gateway.app.inject({ method: 'GET', url: pathOf(tampered.toString()) })).statusCode).toBe(404);
    const extended = new URL(url);
    extended.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 86_400));
    expect((await t.gateway.app.inject({ method: 'GET', url: pathOf(extended.toString()) })).statusCode).toBe(404);
    const otherKey = new URL(url);
    otherKey.pathname = otherKey.pathname.replace('alpha.pdf', 'beta.pdf');
    expect((await t.gateway.app.inject({ method: 'GET', url: pathOf(otherKey.toString()) })).statusCode).toBe(404);

    // Still good just before the hour is up, gone after it.
    clock += 3599;
    expect((await t.gateway.app.inject({ method: 'GET', url: pathOf(link.url) })).statusCode).toBe(200);
    clock += 2;
    const expired = await t.gateway.app.inject({ method: 'GET', url: pathOf(link.url) });
    expect(expired.statusCode).not.toBe(200);
    expect(expired.rawPayload.includes(ALPHA_SOURCE.subarray(0, 64))).toBe(false);

    // A new link works again.
    const fresh = (await wiki(t, A.key, '/pages/alpha/source')).json();
    const again = await t.gateway.app.inject({ method: 'GET', url: pathOf(fresh.url) });
    expect(again.statusCode).toBe(200);
    expect(Buffer.compare(again.rawPayload, ALPHA_SOURCE)).toBe(0);
  });

  it('gives 404 for a page without a source', async () => {
    const response = await wiki(t, A.key, '/pages/beta/source');
    expect(response.statusCode).toBe(404);
  });
});

describe('GET /api/v1/ext/wiki/kbs', () => {
  it('lists exactly the bases each account can read, with page counts', async () => {
    const kbsOf = async (key: string) => {
      const response = await wiki(t, key, '/kbs');
      expect(response.statusCode).toBe(200);
      return (response.json().kbs as Array<{ kb_id: string; page_count: number }>).map((k) => ({ kb_id: k.kb_id, page_count: k.page_count }));
    };
    expect(await kbsOf(A.key)).toEqual([
      { kb_id: 'default', page_count: BULK + 5 }, // bulk pages + alpha, beta, gamma, long, delta
      { kb_id: 'team-a', page_count: 2 },
    ]);
    expect(await kbsOf(B.key)).toEqual([
      { kb_id: 'default', page_count: 1 },
      { kb_id: 'team-a', page_count: 2 },
    ]);
    expect(await kbsOf(C.key)).toEqual([{ kb_id: 'default', page_count: 1 }]);
  });
});

describe('errors', () => {
  const ALL = (kb: Record<string, string> = {}): Array<[string, Record<string, string>]> => [
    ['/search', { q: 'roadmap', ...kb }],
    ['/tags', kb],
    ['/tags/roadmap', kb],
    ['/pages', { ids: 'team-page', ...kb }],
    ['/pages/team-page', kb],
    ['/pages/team-page/backlinks', kb],
    ['/pages/team-page/source', kb],
  ];

  it('401 invalid_api_key for a missing, malformed or unknown key on all 8 endpoints', async () => {
    const bogus = `sk-AAAAAAAA-${'0'.repeat(64)}`;
    for (const key of [null, 'sk-short', bogus]) {
      for (const [path, query] of [...ALL(), ['/kbs', {}] as [string, Record<string, string>]]) {
        const response = await wiki(t, key, path, query);
        expect(response.statusCode, `${path} ${key}`).toBe(401);
        expect(response.json().error.code).toBe('invalid_api_key');
      }
    }
    expect((await wiki(t, bogus, '/kbs')).json().error.message).toBe(AUTH_MESSAGES.invalid);
  });

  it('a missing page, a missing base and an unreadable base give identical 404s', async () => {
    const missingPage = await wiki(t, C.key, '/pages/no-such-page');
    const missingKb = await wiki(t, C.key, '/pages/team-page', { kb_id: 'no-such-kb' });
    const unreadable = await wiki(t, C.key, '/pages/team-page', { kb_id: 'team-a' });
    const otherPersonal = await wiki(t, C.key, '/pages/alpha'); // A's personal page, C's personal base
    for (const response of [missingPage, missingKb, unreadable, otherPersonal]) {
      expect(response.statusCode).toBe(404);
      expect(response.body).toBe(missingPage.body);
    }
    expect(missingPage.json().error.code).toBe('not_found');

    // Every kb_id-taking endpoint: unreadable and missing bases look the same.
    for (const [path, query] of ALL({ kb_id: 'team-a' })) {
      const forbidden = await wiki(t, C.key, path, query);
      const missing = await wiki(t, C.key, path, { ...query, kb_id: 'no-such-kb' });
      expect(forbidden.statusCode, path).toBe(404);
      expect(forbidden.body, path).toBe(missing.body);
      expect(forbidden.body, path).toBe(missingPage.body);
    }
    // Missing page in a readable base: same body again, on the page endpoints.
    for (const path of ['/pages/no-such-page', '/pages/no-such-page/backlinks', '/pages/no-such-page/source']) {
      const response = await wiki(t, B.key, path, { kb_id: 'team-a' });
      expect(response.statusCode, path).toBe(404);
      expect(response.body, path).toBe(missingPage.body);
    }
  });

  it('answers at a zero balance: the endpoints are free', async () => {
    const D = await t.accountWithKey();
    await putObject(t, 'src/d.txt', Buffer.from('source of d'), 'text/plain');
    await putPage(t, D.accountId, 'default', 'd-page', { title: 'D page', tags: ['dtag'], links: ['d-other'], body: 'hello world', source: { r2_key: 'src/d.txt' } });
    await putPage(t, D.accountId, 'default', 'd-other', { title: 'D other', body: 'see [[d-page]]' });
    const ledger = t.gateway.ledger;
    expect((await ledger.reserve(D.accountId, { holdId: 'kb-h1', amount: parseUsd('40.44'), keyId: null, purpose: 'test', ttlSeconds: 60 })).ok).toBe(true);
    expect((await ledger.settle(D.accountId, 'kb-h1', parseUsd('40.44'))).ok).toBe(true);
    expect((await ledger.wallet(D.accountId)).balance).toBe(0n);

    const calls: Array<[string, Record<string, string>]> = [
      ['/search', { q: 'hello' }],
      ['/kbs', {}],
      ['/tags', {}],
      ['/tags/dtag', {}],
      ['/pages', { ids: 'd-page' }],
      ['/pages/d-page', {}],
      ['/pages/d-page/backlinks', {}],
      ['/pages/d-page/source', {}],
    ];
    for (const [path, query] of calls) {
      const response = await wiki(t, D.key, path, query);
      expect(response.statusCode, `${path}: ${response.body}`).toBe(200);
    }
    const source = (await wiki(t, D.key, '/pages/d-page/source')).json();
    expect((await t.gateway.app.inject({ method: 'GET', url: pathOf(source.url) })).body).toBe('source of d');
    // Reading spent nothing.
    expect((await ledger.wallet(D.accountId)).balance).toBe(0n);
  });
});

describe('odd input', () => {
  it('tags with "/", "+", spaces, non-ASCII or "#" are reachable URL-encoded', async () => {
    const E = await t.accountWithKey();
    const tags = ['a/b', 'c++', 'x y', 'ümlaut', '#hash'];
    await putPage(t, E.accountId, 'default', 'tagged', { title: 'Tagged', tags });
    expect((await wiki(t, E.key, '/tags')).json().tags).toHaveLength(tags.length);
    for (const tag of tags) {
      const response = await wiki(t, E.key, `/tags/${encodeURIComponent(tag)}`);
      expect(response.statusCode, tag).toBe(200);
      expect(response.json().pages.map((p: { id: string }) => p.id), tag).toEqual(['tagged']);
    }
  });

  it('answers any q with 200 (stop words, operators, unbalanced quotes)', async () => {
    for (const q of ['the', ':*&|!()', '"unterminated', 'OR', "o'reilly", '\\', '%', '😀', 'a'.repeat(2000)]) {
      const response = await wiki(t, A.key, '/search', { q });
      expect(response.statusCode, q.slice(0, 20)).toBe(200);
      expect(response.json()).toMatchObject({ total_hits: 0, returned: 0, has_more: false, results: [] });
    }
  });

  it('does not fail with 500 on repeated query parameters', async () => {
    const inject = (url: string) => t.gateway.app.inject({ method: 'GET', url: `/api/v1/ext/wiki${url}`, headers: { 'x-api-key': A.key } });
    const ids = await inject('/pages?ids=alpha&ids=gamma');
    expect(ids.statusCode, ids.body).toBeLessThan(500);
    const q = await inject('/search?q=spooky&q=zebra');
    expect(q.statusCode, q.body).toBeLessThan(500);
    const kb = await inject('/search?q=spooky&kb_id=default&kb_id=team-a');
    expect(kb.statusCode, kb.body).toBeLessThan(500);
    const limit = await inject('/search?q=spooky&limit=1&limit=2');
    expect(limit.statusCode, limit.body).toBeLessThan(500);
    // An offset beyond what the database takes is the client's mistake, not a gateway fault.
    const huge = await inject('/search?q=spooky&offset=100000000000000000000');
    expect(huge.statusCode, huge.body).toBe(400);
    expect(huge.json().error.code).toBe('invalid_request');
  });
});

describe('access control between accounts', () => {
  it('a reader reads a team base by kb_id; a non-reader gets 404; default is always the caller’s own', async () => {
    const read = await wiki(t, B.key, '/pages/team-page', { kb_id: 'team-a' });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({ id: 'team-page', kb_id: 'team-a', title: 'Team secret roadmap' });
    expect((await wiki(t, B.key, '/search', { q: 'roadmap', kb_id: 'team-a' })).json().results.map((h: { id: string }) => h.id)).toEqual(['team-page']);
    expect((await wiki(t, B.key, '/tags', { kb_id: 'team-a' })).json().tags).toEqual([{ tag: 'roadmap', count: 1 }]);

    expect((await wiki(t, C.key, '/pages/team-page', { kb_id: 'team-a' })).statusCode).toBe(404);
    expect((await wiki(t, C.key, '/search', { q: 'roadmap', kb_id: 'team-a' })).statusCode).toBe(404);

    // B's default is B's personal base, not A's.
    const bDefault = (await wiki(t, B.key, '/search', { q: 'roadmap' })).json();
    expect(bDefault.results.map((h: { id: string }) => h.id)).toEqual(['b-note']);
    expect((await wiki(t, B.key, '/pages/alpha')).statusCode).toBe(404);
    expect((await wiki(t, B.key, '/pages/b-note')).json()).toMatchObject({ id: 'b-note', kb_id: 'default' });
    expect((await wiki(t, A.key, '/pages/b-note')).statusCode).toBe(404);
    expect((await wiki(t, B.key, '/search', { q: 'zebra' })).json().total_hits).toBe(0);
    // The readers' list does not let B write, and is not a way in to A's personal base.
    expect((await wiki(t, B.key, '/pages/alpha', { kb_id: 'team-a' })).json().title).toBe('Team alpha');
  });

  it('another account’s personal base cannot be named by its internal key', async () => {
    for (const kb_id of [`default.${A.accountId}`, A.accountId, `default/${A.accountId}`]) {
      const response = await wiki(t, C.key, '/pages/alpha', { kb_id });
      expect(response.statusCode, kb_id).toBe(404);
      expect((await wiki(t, C.key, '/search', { q: 'spooky', kb_id })).statusCode, kb_id).toBe(404);
    }
  });

  it('PATCH /admin/v1/accounts/{id}/kbs/{kb} changes who can read, at once', async () => {
    await createKb(t, A.accountId, 'team-x', [B.accountId]);
    await putPage(t, A.accountId, 'team-x', 'x-page', { title: 'X page', body: 'xylophone' });
    expect((await wiki(t, B.key, '/pages/x-page', { kb_id: 'team-x' })).statusCode).toBe(200);
    expect((await wiki(t, C.key, '/pages/x-page', { kb_id: 'team-x' })).statusCode).toBe(404);

    const patched = await t.admin('PATCH', `/accounts/${A.accountId}/kbs/team-x`, { reader_account_ids: [C.accountId] });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ kb_id: 'team-x', reader_account_ids: [C.accountId] });
    expect((await wiki(t, B.key, '/pages/x-page', { kb_id: 'team-x' })).statusCode).toBe(404);
    expect((await wiki(t, C.key, '/pages/x-page', { kb_id: 'team-x' })).statusCode).toBe(200);
    expect((await wiki(t, C.key, '/kbs')).json().kbs.map((k: { kb_id: string }) => k.kb_id)).toEqual(['default', 'team-x']);
    expect((await wiki(t, B.key, '/kbs')).json().kbs.map((k: { kb_id: string }) => k.kb_id)).toEqual(['default', 'team-a']);

    expect((await t.admin('PATCH', `/accounts/${A.accountId}/kbs/team-x`, { reader_account_ids: [] })).statusCode).toBe(200);
    expect((await wiki(t, C.key, '/pages/x-page', { kb_id: 'team-x' })).statusCode).toBe(404);
    expect((await wiki(t, C.key, '/kbs')).json().kbs.map((k: { kb_id: string }) => k.kb_id)).toEqual(['default']);
    // The owner keeps reading.
    expect((await wiki(t, A.key, '/pages/x-page', { kb_id: 'team-x' })).statusCode).toBe(200);
  });

  it('the admin API keeps bases apart: only the owner writes, ids are unique, default is reserved', async () => {
    expect((await t.admin('PUT', `/accounts/${B.accountId}/kbs/team-a/pages/intruder`, { title: 'x' })).statusCode).toBe(404);
    expect((await t.admin('POST', `/accounts/${B.accountId}/kbs`, { kb_id: 'team-a', title: 'dup' })).statusCode).toBe(409);
    expect((await t.admin('POST', `/accounts/${B.accountId}/kbs`, { kb_id: 'default', title: 'dup' })).statusCode).toBe(400);
    expect((await t.admin('PATCH', `/accounts/${B.accountId}/kbs/team-a`, { reader_account_ids: [C.accountId] })).statusCode).toBe(404);
    expect((await t.admin('POST', `/accounts/${A.accountId}/kbs`, { kb_id: 'team-y', title: 'y', reader_account_ids: ['acct_nope'] })).statusCode).toBe(400);
  });

  it('PATCH refuses unknown reader accounts, as creation does', async () => {
    await createKb(t, A.accountId, 'team-z', [B.accountId]);
    const patched = await t.admin('PATCH', `/accounts/${A.accountId}/kbs/team-z`, { reader_account_ids: [B.accountId, 'acct_nope'] });
    expect(patched.statusCode, patched.body).toBe(400);
  });
});
