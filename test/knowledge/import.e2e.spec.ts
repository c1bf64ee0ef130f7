import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildGateway } from '../support/child-gateway';

let notesDir: string;
let gw: ChildGateway;
let base: string;

beforeAll(async () => {
  gw = await ChildGateway.prepare();
  base = gw.base;
  notesDir = mkdtempSync(join(tmpdir(), 'gateway-kb-notes-'));
});

afterAll(async () => {
  await gw.cleanup();
  rmSync(notesDir, { recursive: true, force: true });
});

// ---- the folder of notes ----------------------------------------------------

interface Note {
  readonly file: string;
  readonly id: string;
  readonly title: string;
  readonly tags: string[];
  readonly links: string[];
  readonly word: string;
}

const COUNT = 300;
const pad = (i: number) => String(i).padStart(3, '0');
/** A word unique to note i that the English stemmer leaves alone ("kbwordaab"). */
const wordOf = (i: number) => `kbword${String.fromCharCode(97 + Math.floor(i / 26 / 26) % 26, 97 + Math.floor(i / 26) % 26, 97 + (i % 26))}`;

/**
 * 300 notes: most with front matter (explicit id, tags, aliases, links, summary), every
 * tenth without front matter (title from the heading, id from the path), every
 * twentieth neither (title from the file name); a third nested in subfolders.
 */
function writeNotes(dir: string): Note[] {
  const notes: Note[] = [];
  for (let i = 0; i < COUNT; i++) {
    const folder = i % 3 === 0 ? `topics/area-${i % 4}/` : i % 3 === 1 ? 'inbox/' : '';
    const file = `${folder}Note ${pad(i)}.md`.replace(/ /g, i % 2 === 0 ? '_' : '-');
    const word = wordOf(i);
    const next = `note-${pad((i + 1) % COUNT)}`;
    let content: string;
    let note: Note;
    if (i % 20 === 5) {
      const slug = file.replace(/\.md$/, '').toLowerCase().replace(/[^a-z0-9._-]+/g, '-');
      note = { file, id: slug, title: file.split('/').pop()!.replace(/\.md$/, ''), tags: [], links: [], word };
      content = `Just text mentioning ${word} and nothing else.\n`;
    } else if (i % 10 === 0) {
      const slug = file.replace(/\.md$/, '').toLowerCase().replace(/[^a-z0-9._-]+/g, '-');
      note = { file, id: slug, title: `Heading of note ${pad(i)}`, tags: [], links: [next], word };
      content = `# Heading of note ${pad(i)}\n\nFirst paragraph about ${word}.\n\nSee [[${next}]] for more.\n`;
    } else {
      const tags = ['imported', `group-${i % 7}`];
      note = { file, id: `note-${pad(i)}`, title: `Imported note ${pad(i)}`, tags, links: [next], word };
      content = [
        '---',
        `id: note-${pad(i)}`,
        `title: "Imported note ${pad(i)}"`,
        `summary: Summary of note ${pad(i)}`,
        `tags: [${tags.join(', ')}]`,
        'aliases:',
        `  - alias-${pad(i)}`,
        `links: [${next}]`,
        `confidence: ${i % 2 ? 'high' : 'low'}`,
        `needs_review: ${i % 4 === 1}`,
        '---',
        '',
        `# Imported note ${pad(i)}`,
        '',
        `This note is about ${word}. ${'Filler sentence for length. '.repeat(i % 5 === 0 ? 200 : 5)}`,
        '',
        i > 0 ? `Back to [[note-${pad(i - 1)}|the previous one]].` : 'The first note.',
        '',
      ].join('\n');
    }
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), content);
    notes.push(note);
  }
  return notes;
}

type Json = any;

describe('kb import: a folder of a few hundred Markdown files, then REST and MCP', () => {
  it('imports, searches, reads, and re-imports without duplicates', async () => {
    const notes = writeNotes(notesDir);
    await gw.start();

    const account = await gw.run(['accounts', 'create', 'Librarian']);
    expect(account.code, account.stderr).toBe(0);
    const accountId = JSON.parse(account.stdout).id as string;
    const key = JSON.parse((await gw.run(['keys', 'create', accountId, '--name', 'reader'])).stdout).key as string;

    const started = Date.now();
    const first = await gw.run(['kb', 'import', accountId, notesDir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`imported ${COUNT} of ${COUNT} files into default: ${COUNT} created, 0 updated or unchanged, 0 failed`);
    const importMs = Date.now() - started;

    const get = async (path: string, query: Record<string, string | number> = {}) => {
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
      const response = await fetch(`${base}/api/v1/ext/wiki${path}${qs ? `?${qs}` : ''}`, { headers: { 'x-api-key': key } });
      return { status: response.status, body: (await response.json()) as Json };
    };

    expect((await get('/kbs')).body.kbs).toEqual([expect.objectContaining({ kb_id: 'default', page_count: COUNT })]);

    // Every note is findable by its own word, with the fields from its front matter.
    for (const i of [0, 1, 5, 10, 42, 150, 299]) {
      const note = notes[i]!;
      const search = await get('/search', { q: note.word });
      expect(search.status).toBe(200);
      expect(search.body.total_hits, note.file).toBe(1);
      expect(search.body.results[0]).toMatchObject({ id: note.id, title: note.title, tags: note.tags });
      expect(search.body.results[0].snippet).toContain(note.word);
    }
    const imported = notes.filter((n) => n.tags.includes('imported')).length;
    const tagged = await get('/search', { q: 'imported', limit: 50 });
    expect(tagged.body).toMatchObject({ total_hits: imported, returned: 50, has_more: true });
    const tags = (await get('/tags')).body.tags as Array<{ tag: string; count: number }>;
    expect(tags).toContainEqual({ tag: 'imported', count: imported });
    expect(tags).toContainEqual({ tag: 'group-3', count: notes.filter((n) => n.tags.includes('group-3')).length });
    expect((await get('/tags/group-3')).body.pages).toHaveLength(notes.filter((n) => n.tags.includes('group-3')).length);
    // /tags/{tag} lists the pages under the tag: as many as /tags counted.
    expect.soft((await get('/tags/imported')).body.pages).toHaveLength(imported);

    const page = (await get('/pages/note-042')).body;
    expect(page).toMatchObject({
      id: 'note-042',
      kb_id: 'default',
      title: 'Imported note 042',
      summary: 'Summary of note 042',
      tags: ['imported', 'group-0'],
      aliases: ['alias-042'],
      links: ['note-043'],
      confidence: 'low',
      needs_review: false,
      source: { r2_key: `kb/${accountId}/default/${notes[42]!.file}`, filename: notes[42]!.file.split('/').pop() },
    });
    expect(page.body).not.toContain('---');
    expect(page.body.startsWith('# Imported note 042')).toBe(true);
    expect(page.outgoing_links).toEqual(
      expect.arrayContaining([
        { id: 'note-043', resolved: true, title: 'Imported note 043' },
        { id: 'note-041', resolved: true, title: 'Imported note 041' },
      ]),
    );
    const backlinks = (await get('/pages/note-042/backlinks')).body.backlinks.map((p: { id: string }) => p.id).sort();
    expect(backlinks).toEqual(['note-041', 'note-043']);
    // A note without front matter: title from its heading, id from its path.
    const plain = notes[10]!;
    expect((await get(`/pages/${plain.id}`)).body).toMatchObject({ id: plain.id, title: plain.title, tags: [] });
    expect((await get(`/pages/${notes[5]!.id}`)).body).toMatchObject({ title: notes[5]!.title });

    const batch = await get('/pages', { ids: notes.slice(0, 30).map((n) => n.id).join(',') });
    expect(batch.body.pages).toHaveLength(25);
    const big = batch.body.pages.find((p: { id: string }) => p.id === 'note-015');
    expect(big.body_truncated).toBe(true);
    expect(big.body).toHaveLength(4000);

    // The source is the file itself.
    const source = (await get('/pages/note-042/source')).body;
    expect(source.url_ttl_secs).toBe(3600);
    const download = await fetch(source.url);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(readFileSync(join(notesDir, notes[42]!.file)))).toBe(true);

    // MCP with the SDK client, on the same key.
    const client = new Client({ name: 'import-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    try {
      const hits = (await client.callTool({ name: 'search_wiki', arguments: { q: notes[77]!.word } })).structuredContent as Json;
      expect(hits.results.map((h: { id: string }) => h.id)).toEqual([notes[77]!.id]);
      const read = (await client.callTool({ name: 'read_page', arguments: { id: 'note-042' } })).structuredContent as Json;
      expect(read).toMatchObject({ id: 'note-042', title: 'Imported note 042', kb_id: 'default' });
      expect(read.body).toBe(page.body);
      const many = (await client.callTool({ name: 'search_wiki', arguments: { q: 'imported' } })).structuredContent as Json;
      expect(many).toMatchObject({ total_hits: imported, returned: 10, has_more: true });
      const byTag = (await client.callTool({ name: 'list_by_tag', arguments: { tag: 'group-3' } })).structuredContent as Json;
      expect(byTag.pages).toHaveLength(notes.filter((n) => n.tags.includes('group-3')).length);
      const allTagged = (await client.callTool({ name: 'list_by_tag', arguments: { tag: 'imported' } })).structuredContent as Json;
      expect.soft(allTagged.pages).toHaveLength(imported);
    } finally {
      await client.close();
    }

    // Re-import: nothing new.
    const second = await gw.run(['kb', 'import', accountId, notesDir]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain(`${COUNT} of ${COUNT} files into default: 0 created, ${COUNT} updated or unchanged, 0 failed`);
    expect((await get('/kbs')).body.kbs[0].page_count).toBe(COUNT);
    expect((await get('/search', { q: notes[42]!.word })).body.total_hits).toBe(1);

    // Edit one file, add one: one update, one creation.
    const edited = join(notesDir, notes[42]!.file);
    writeFileSync(edited, readFileSync(edited, 'utf8').replace('This note is about', 'This edited note mentions kbnewword and is about'));
    writeFileSync(join(notesDir, 'inbox', 'brand-new.md'), '---\ntitle: Brand new\ntags: [fresh]\n---\nA freshly added kbfreshword note.\n');
    const third = await gw.run(['kb', 'import', accountId, notesDir]);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toContain(`${COUNT + 1} of ${COUNT + 1} files into default: 1 created, ${COUNT} updated or unchanged, 0 failed`);
    expect((await get('/kbs')).body.kbs[0].page_count).toBe(COUNT + 1);
    expect((await get('/search', { q: 'kbnewword' })).body.results.map((h: { id: string }) => h.id)).toEqual(['note-042']);
    expect((await get('/search', { q: 'kbfreshword' })).body.results.map((h: { id: string }) => h.id)).toEqual(['inbox-brand-new']);
    const reread = await fetch((await get('/pages/note-042/source')).body.url);
    expect(await reread.text()).toBe(readFileSync(edited, 'utf8'));

    expect(importMs).toBeLessThan(45_000);
  }, 90_000);

  it('imports into a team base that a reader can read, and files whose names have spaces or accents', async () => {
    if (!gw.running) await gw.start();
    const owner = JSON.parse((await gw.run(['accounts', 'create', 'Owner'])).stdout).id as string;
    const reader = JSON.parse((await gw.run(['accounts', 'create', 'Reader'])).stdout).id as string;
    const outsider = JSON.parse((await gw.run(['accounts', 'create', 'Outsider'])).stdout).id as string;
    const readerKey = JSON.parse((await gw.run(['keys', 'create', reader, '--name', 'r'])).stdout).key as string;
    const outsiderKey = JSON.parse((await gw.run(['keys', 'create', outsider, '--name', 'o'])).stdout).key as string;
    const created = await gw.run(['kb', 'create', owner, 'handbook', '--title', 'Team handbook', '--readers', reader]);
    expect(created.code, created.stdout + created.stderr).toBe(0);

    const dir = mkdtempSync(join(tmpdir(), 'gateway-kb-team-'));
    try {
      mkdirSync(join(dir, 'How To'), { recursive: true });
      writeFileSync(join(dir, 'How To', 'Getting Started.md'), '# Getting started\n\nOnboarding kbonboardword steps.\n');
      writeFileSync(join(dir, 'café notes.md'), '---\ntags: [coffee]\n---\nAbout kbcoffeeword.\n');
      writeFileSync(join(dir, 'plain.md'), 'Plain kbplainword.\n');
      writeFileSync(join(dir, '日本語.md'), '\uFEFF---\ntitle: Japanese notes\n---\nAbout kbjapanword.\n');
      const imported = await gw.run(['kb', 'import', owner, dir, '--kb', 'handbook']);
      expect(imported.stderr).toBe('');
      expect(imported.stdout).toContain('4 of 4 files into handbook: 4 created');
      expect(imported.code).toBe(0);

      const get = (path: string, k: string) => fetch(`${base}/api/v1/ext/wiki${path}`, { headers: { 'x-api-key': k } });
      const found = await get('/search?q=kbonboardword&kb_id=handbook', readerKey);
      expect(found.status).toBe(200);
      expect(((await found.json()) as Json).results.map((h: { id: string }) => h.id)).toEqual(['how-to-getting-started']);
      expect((await get('/search?q=kbonboardword&kb_id=handbook', outsiderKey)).status).toBe(404);
      expect(((await (await get('/search?q=kbonboardword', readerKey)).json()) as Json).total_hits).toBe(0);

      // A file name without Latin letters still gets a page id; a byte-order mark does not hide the front matter.
      const japanese = ((await (await get('/search?q=kbjapanword&kb_id=handbook', readerKey)).json()) as Json).results;
      expect(japanese).toHaveLength(1);
      expect(japanese[0].id).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]*$/);
      expect(japanese[0].title).toBe('Japanese notes');

      for (const [id, file] of [
        [japanese[0].id as string, '日本語.md'],
        ['how-to-getting-started', 'How To/Getting Started.md'],
        ['cafe-notes', 'café notes.md'],
      ] as const) {
        const source = await get(`/pages/${id}/source?kb_id=handbook`, readerKey);
        expect(source.status, id).toBe(200);
        const link = (await source.json()) as Json;
        expect(link.r2_key).toBe(`kb/${owner}/handbook/${file}`);
        const download = await fetch(link.url);
        expect(download.status, `${id}: ${link.url}`).toBe(200);
        expect(Buffer.from(await download.arrayBuffer()).equals(readFileSync(join(dir, file)))).toBe(true);
      }

      // kb update: the reader is dropped, the outsider added.
      const updated = await gw.run(['kb', 'update', owner, 'handbook', '--readers', outsider]);
      expect(updated.code, updated.stdout + updated.stderr).toBe(0);
      expect((await get('/search?q=kbonboardword&kb_id=handbook', readerKey)).status).toBe(404);
      expect((await get('/search?q=kbonboardword&kb_id=handbook', outsiderKey)).status).toBe(200);

      // --no-sources: pages without a source file.
      const bare = await gw.run(['kb', 'import', reader, dir, '--no-sources']);
      expect(bare.code, bare.stderr).toBe(0);
      expect(bare.stdout).toContain('4 of 4 files into default: 4 created');
      const page = (await (await get('/pages/plain', readerKey)).json()) as Json;
      expect(page).toMatchObject({ id: 'plain', source: null });
      expect((await get('/pages/plain/source', readerKey)).status).toBe(404);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
