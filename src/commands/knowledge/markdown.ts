import { createHash } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { compiledAtText, LAST_UNIX_SECOND } from './compiled-at';

/** A page as the admin API takes it (PUT …/pages/{id}). */
export interface ImportedPage {
  readonly id: string;
  readonly page: {
    title: string;
    summary: string;
    tags: string[];
    aliases: string[];
    links: string[];
    body: string;
    confidence: string | null;
    needs_review: boolean;
    source: { r2_key: string; filename: string | null; locator: string | null; compiled_at: string | null; model: string | null } | null;
  };
}

export class FrontMatterError extends Error {}

const FRONT_MATTER = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/;

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.map(String).map((s) => s.trim()).filter(Boolean) : typeof value === 'string' && value.trim() ? [value.trim()] : [];

const text = (value: unknown): string | null => (value === undefined || value === null ? null : String(value));

/** `compiled_at: 1700000000` in front matter is Unix seconds, like the admin API's; text stays text. */
const compiledAt = (value: unknown): string | null =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= LAST_UNIX_SECOND ? compiledAtText(value) : text(value);

/** `notes/Getting Started.md` -> `notes-getting-started`. */
export function slugOf(relativePath: string): string {
  return relativePath
    .replace(/\.(md|markdown)$/i, '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 200);
}

/**
 * A Markdown file with optional YAML front matter -> a knowledge page. Front matter
 * fields: id, title, summary, tags, aliases, links, confidence, needs_review, source
 * ({r2_key, filename, locator, compiled_at, model}). Missing title: the first `# `
 * heading, else the file name; missing summary: the first paragraph.
 */
export function pageFromMarkdown(relativePath: string, file: string, sourceKey: string | null): ImportedPage {
  const content = file.replace(/^\uFEFF/, ''); // a byte-order mark would hide the front matter
  const match = FRONT_MATTER.exec(content);
  let meta: Record<string, unknown> = {};
  if (match) {
    try {
      const parsed: unknown = parseYaml(match[1] ?? '');
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) meta = parsed as Record<string, unknown>;
      else if (parsed !== null) throw new Error('front matter is not a mapping');
    } catch (error) {
      throw new FrontMatterError(`${relativePath}: invalid front matter: ${(error as Error).message}`);
    }
  }
  const body = (match ? content.slice(match[0].length) : content).replace(/^\s+/, '');
  const heading = /^#[ \t]+(.+)$/m.exec(body)?.[1]?.trim();
  const filename = relativePath.split('/').pop()!;
  const firstParagraph = body
    .split(/\r?\n\s*\r?\n/)
    .map((p) => p.trim())
    .find((p) => p !== '' && !p.startsWith('#'));
  const source = meta.source as Record<string, unknown> | undefined;
  return {
    // A name with no Latin letters or digits slugs to nothing: fall back to a stable hash of the path.
    id: text(meta.id) ?? (slugOf(relativePath) || `page-${createHash('sha256').update(relativePath).digest('hex').slice(0, 12)}`),
    page: {
      title: text(meta.title) ?? heading ?? filename.replace(/\.(md|markdown)$/i, ''),
      summary: text(meta.summary) ?? (firstParagraph ?? '').replace(/\s+/g, ' ').slice(0, 300),
      tags: strings(meta.tags),
      aliases: strings(meta.aliases),
      links: strings(meta.links),
      body,
      confidence: text(meta.confidence),
      needs_review: meta.needs_review === true,
      source:
        source && typeof source === 'object'
          ? {
              r2_key: String(source.r2_key ?? sourceKey ?? relativePath),
              filename: text(source.filename) ?? filename,
              locator: text(source.locator),
              compiled_at: compiledAt(source.compiled_at),
              model: text(source.model),
            }
          : sourceKey
            ? { r2_key: sourceKey, filename, locator: null, compiled_at: null, model: null }
            : null,
    },
  };
}
