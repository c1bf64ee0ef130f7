import { z } from 'zod';
import { isWebUrl } from '../media-check/checks';
import type { CLIP_LIMITS } from '../media-check/rules';
import type { ClipScene } from './templates';

// The smart-clip SKUs' body (spec, "Smart clip"): one schema for the three, and per SKU which fields it
// takes and requires. Everything here is pure: the route's I/O (templates, probes) is in video-clip.ts.

export type ClipKind = 'clip-realman' | 'clip-mixcut' | 'clip-news';

/** Spec, "Other constants": up to 10 materials. */
export const MAX_MATERIALS = 10;
/** A reservation counts this many seconds, or a longer explicit `duration`. */
export const CLIP_RESERVED_SECONDS = 300;
/** clip-news: `duration` is clamped to this range. */
export const NEWS_DURATION_S = { min: 5, max: 300 } as const;

const Url = z.string().min(1).max(4096);
const Material = z.strictObject({
  type: z.enum(['image', 'video']),
  file_url: Url,
  sound_switch: z.boolean().optional(),
});
const Bgm = z.strictObject({
  mode: z.enum(['auto', 'none', 'custom']),
  url: Url.optional(),
  /** Passed upstream as sent; 0 silent, 100 as recorded. */
  volume: z.number().min(0).max(100).optional(),
});

export const ClipBody = z.looseObject({
  model: z.string().min(1),
  style_id: z.string().min(1).max(200).optional(),
  source_video_url: Url.optional(),
  audio_url: Url.optional(),
  materials: z.array(Material).max(MAX_MATERIALS).optional(),
  title: z.string().min(1).max(200).optional(),
  duration: z.number().positive().max(3600).optional(),
  material_composition: z.enum(['random', 'order']).optional(),
  preprocess: z.enum(['roughCut', 'sliceMerge']).optional(),
  bgm: Bgm.optional(),
  cover_url: Url.optional(),
  introduce_card: z.strictObject({ name: z.string().min(1).max(100), description: z.string().min(1).max(1000) }).optional(),
  language: z.string().min(1).max(32).optional(),
});
export type ClipBody = z.output<typeof ClipBody>;
export type ClipField = Exclude<keyof ClipBody, 'model'>;

/** Taken when sent, and neither checked nor sent upstream: the standard video's `content`, which a client
 * of the common video endpoint may send; the clip SKUs' own fields replace it. */
const IGNORED: readonly string[] = ['content'];

/** The fields every clip SKU takes. */
const COMMON: readonly ClipField[] = ['style_id', 'title', 'duration', 'bgm', 'cover_url', 'introduce_card', 'language'];

export interface ClipSkuRules {
  /** The template scene its `style_id` comes from. */
  readonly scene: ClipScene;
  readonly takes: readonly ClipField[];
  readonly requires: readonly ClipField[];
}

/** The spec's table, per SKU. */
export const CLIP_SKUS: Readonly<Record<ClipKind, ClipSkuRules>> = {
  'clip-realman': { scene: 'realMan', takes: [...COMMON, 'source_video_url', 'materials', 'preprocess'], requires: ['style_id', 'source_video_url'] },
  'clip-mixcut': { scene: 'oralMixCutting', takes: [...COMMON, 'audio_url', 'materials'], requires: ['style_id', 'audio_url', 'materials'] },
  'clip-news': { scene: 'newsMixCutting', takes: [...COMMON, 'materials', 'material_composition'], requires: ['style_id', 'materials', 'title'] },
};

/** Every URL of the body: where it sits (as a 400 names it) and which of the spec's media limits it answers to. */
export function urlsOf(body: ClipBody): Array<{ readonly field: string; readonly url: string; readonly limit: keyof typeof CLIP_LIMITS }> {
  const urls: Array<{ field: string; url: string; limit: keyof typeof CLIP_LIMITS }> = [];
  if (body.source_video_url !== undefined) urls.push({ field: 'source_video_url', url: body.source_video_url, limit: 'sourceVideo' });
  if (body.audio_url !== undefined) urls.push({ field: 'audio_url', url: body.audio_url, limit: 'spokenAudio' });
  body.materials?.forEach((m, i) => urls.push({ field: `materials[${i}].file_url`, url: m.file_url, limit: m.type === 'image' ? 'materialImage' : 'materialVideo' }));
  if (body.bgm?.url !== undefined) urls.push({ field: 'bgm.url', url: body.bgm.url, limit: 'bgm' });
  if (body.cover_url !== undefined) urls.push({ field: 'cover_url', url: body.cover_url, limit: 'cover' });
  return urls;
}

/** The rules beyond the schema for one SKU: which fields it takes and requires, `bgm`'s url, public links. A message: a 400. */
export function checkClipFields(kind: ClipKind, body: ClipBody): string | null {
  const rules = CLIP_SKUS[kind];
  const sent = Object.keys(body).filter((k) => k !== 'model' && !IGNORED.includes(k) && (body as Record<string, unknown>)[k] !== undefined);
  const foreign = sent.filter((k) => !(rules.takes as readonly string[]).includes(k));
  if (foreign.length > 0) return `${foreign.join(', ')}: not a field of ${kind} (it takes ${rules.takes.join(', ')})`;
  const missing = rules.requires.filter((k) => body[k] === undefined);
  if (missing.length > 0) return `${missing.join(', ')}: required for ${kind}`;
  if (rules.requires.includes('materials') && body.materials?.length === 0) return `materials: ${kind} needs at least one (up to ${MAX_MATERIALS})`;
  if (body.bgm?.mode === 'custom' && body.bgm.url === undefined) return 'bgm.url: required when bgm.mode is custom';
  if (body.bgm !== undefined && body.bgm.mode !== 'custom' && body.bgm.url !== undefined) return `bgm.url: only with bgm.mode custom (got mode ${body.bgm.mode})`;
  for (const { field, url } of urlsOf(body)) if (!isWebUrl(url)) return `${field}: must be a public http(s) URL`;
  return null;
}

/** The seconds the hold stands for: 300, or a longer explicit `duration` (clip-news: clamped first, so never longer). */
export function reservedSeconds(kind: ClipKind, body: ClipBody): number {
  const asked = kind === 'clip-news' ? newsDuration(body.duration) : body.duration;
  return Math.max(CLIP_RESERVED_SECONDS, Math.ceil(asked ?? 0));
}

export function newsDuration(duration: number | undefined): number | undefined {
  return duration === undefined ? undefined : Math.min(NEWS_DURATION_S.max, Math.max(NEWS_DURATION_S.min, duration));
}

/** What the template says of the inputs it has room for (unknown: both sent). */
export interface TemplateFlags {
  readonly hasTitle: boolean;
  readonly hasPersona: boolean;
}
export const ALL_LAYERS: TemplateFlags = { hasTitle: true, hasPersona: true };

/**
 * The upstream body (without `model`): the fields as sent, except that `duration` goes only with
 * clip-news (clamped; for the others it is a billing reference), clip-news states its default
 * composition, and a template without a title (persona) layer gets no `title` (`introduce_card`):
 * the spec's "when a flag is false the matching input is ignored".
 */
export function upstreamFields(kind: ClipKind, body: ClipBody, flags: TemplateFlags): Record<string, unknown> {
  const { model: _model, duration, ...fields } = body;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && !IGNORED.includes(k)) out[k] = v;
  if (kind === 'clip-news') {
    if (duration !== undefined) out.duration = newsDuration(duration);
    out.material_composition = body.material_composition ?? 'random';
  }
  if (!flags.hasTitle) delete out.title;
  if (!flags.hasPersona) delete out.introduce_card;
  return out;
}
