import { describe, expect, it } from 'vitest';
import { pageFromMarkdown, slugOf } from '../../src/commands/knowledge/markdown';
import { linkedIds } from '../../src/projections/knowledge/projection';

describe('pageFromMarkdown (the kb import parser)', () => {
  it('reads every front-matter field', () => {
    const { id, page } = pageFromMarkdown(
      'notes/x.md',
      [
        '---',
        'id: custom-id',
        'title: Custom title',
        'summary: Short summary',
        'tags: [a, b]',
        'aliases: [Alias One]',
        'links: [other]',
        'confidence: high',
        'needs_review: true',
        'source: {r2_key: raw/x.pdf, filename: x.pdf, locator: "p. 2", compiled_at: "2026-01-01", model: m1}',
        '---',
        '# Heading',
        '',
        'Body text.',
      ].join('\n'),
      'kb/a/default/notes/x.md',
    );
    expect(id).toBe('custom-id');
    expect(page).toEqual({
      title: 'Custom title',
      summary: 'Short summary',
      tags: ['a', 'b'],
      aliases: ['Alias One'],
      links: ['other'],
      body: '# Heading\n\nBody text.',
      confidence: 'high',
      needs_review: true,
      source: { r2_key: 'raw/x.pdf', filename: 'x.pdf', locator: 'p. 2', compiled_at: '2026-01-01', model: 'm1' },
    });
  });

  it('without front matter: id from the path, title from the heading, else the file name; summary from the first paragraph', () => {
    const headed = pageFromMarkdown('Sub Dir/My Note.md', '# The heading\n\nFirst paragraph\nwraps here.\n\nSecond.', 'k');
    expect(headed.id).toBe('sub-dir-my-note');
    expect(headed.page).toMatchObject({ title: 'The heading', summary: 'First paragraph wraps here.', tags: [], links: [] });
    expect(headed.page.source).toEqual({ r2_key: 'k', filename: 'My Note.md', locator: null, compiled_at: null, model: null });
    const bare = pageFromMarkdown('bare.md', 'Just text.', null);
    expect(bare).toMatchObject({ id: 'bare', page: { title: 'bare', summary: 'Just text.', source: null } });
  });

  it('handles CRLF line endings', () => {
    const { page } = pageFromMarkdown('w.md', '---\r\ntitle: Windows\r\ntags: [x]\r\n---\r\n\r\nBody\r\n', null);
    expect(page).toMatchObject({ title: 'Windows', tags: ['x'], body: 'Body\r\n' });
  });

  it('reads front matter after a UTF-8 byte-order mark', () => {
    // Files saved by Windows editors often start with U+FEFF.
    const { page } = pageFromMarkdown('bom.md', '\uFEFF---\ntitle: With BOM\ntags: [a]\n---\nbody here\n', null);
    expect(page.title).toBe('With BOM');
    expect(page.tags).toEqual(['a']);
    expect(page.body).toBe('body here\n');
  });

  it('treats an empty front-matter block as front matter', () => {
    const { page } = pageFromMarkdown('empty.md', '---\n---\n# Empty front matter\n\nText.\n', null);
    expect(page.title).toBe('Empty front matter');
    expect(page.body).toBe('# Empty front matter\n\nText.\n');
    expect(page.summary).toBe('Text.');
  });

  it('does not take a bare "#" line as a heading', () => {
    const { page } = pageFromMarkdown('hash.md', '#\nnot a heading\n\nPara two', null);
    expect(page.title).toBe('hash');
  });

  it('gives every file name a usable page id (non-Latin names too)', () => {
    // A page id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$; an empty slug cannot be imported.
    const PAGE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
    expect(slugOf('notes/Getting Started.md')).toBe('notes-getting-started');
    expect(slugOf('Ångström.md')).toBe('angstrom');
    for (const name of ['日本語.md', 'Заметки.md', '---.md'])
      expect(pageFromMarkdown(name, 'text', null).id, name).toMatch(PAGE_ID);
    expect(pageFromMarkdown('日本語.md', 'text', null).id).not.toBe(pageFromMarkdown('中文.md', 'text', null).id);
  });
});

describe('linkedIds', () => {
  it('collects links and [[id]], [[id|label]], [[id#section]] from the body, once each', () => {
    expect(linkedIds(['a', 'b'], 'see [[c]], [[d|label]], [[e#part]], [[a]] and [[ f ]] but not [[]] or [x](y)')).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });
});
