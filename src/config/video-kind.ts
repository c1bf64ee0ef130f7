// Which kind of video SKU a model is. DESIGN.md ("Config names"): a model whose id is one of the spec's
// dh-* or clip-* SKU ids needs nothing more than `kind: video`: its rules follow from its id. The
// gateway's own `video.kind` stays for models of other ids (a second lip-sync SKU under its own name);
// on a spec-named id it may only repeat what the id says (`videoKindProblem`, checked at config load).

/** The kinds of video SKU, each with its own body and rules (src/http/media/video/video-skus.ts):
 * `dh-avatar` (a digital human speaking), `dh-lipsync` (a video's lips to an audio), `dh-motion` (motion
 * transfer): the digital-human SKUs, whose `duration` is required and only the reservation's basis;
 * `clip-realman`, `clip-mixcut`, `clip-news`: the smart-clip SKUs (src/clip). */
export const VIDEO_KINDS = ['standard', 'dh-avatar', 'dh-lipsync', 'dh-motion', 'clip-realman', 'clip-mixcut', 'clip-news'] as const;
export type VideoKind = (typeof VIDEO_KINDS)[number];

/** The spec's digital-human and smart-clip SKU ids, and the kind of SKU each one is. */
export const SPEC_VIDEO_SKUS: Readonly<Record<string, Exclude<VideoKind, 'standard'>>> = {
  'dh-avatar': 'dh-avatar',
  'dh-lipsync': 'dh-lipsync',
  'dh-lipsync-pro': 'dh-lipsync',
  'dh-lipsync-max': 'dh-lipsync',
  'dh-motion': 'dh-motion',
  'clip-realman': 'clip-realman',
  'clip-mixcut': 'clip-mixcut',
  'clip-news': 'clip-news',
};

interface VideoModel {
  readonly id: string;
  readonly kind: string;
  readonly video?: { readonly kind?: VideoKind | undefined } | undefined;
}

/** The model's kind of video SKU: its own `video.kind`, else the one its spec-named id implies, else `standard`. */
export function videoKindOf(model: VideoModel): VideoKind {
  if (model.kind !== 'video') return 'standard';
  return model.video?.kind ?? SPEC_VIDEO_SKUS[model.id] ?? 'standard';
}

/** Why a spec-named id is configured against its own rules (another model kind, another `video.kind`); null: it is not. */
export function videoKindProblem(model: VideoModel): { readonly path: 'kind' | 'video'; readonly message: string } | null {
  const implied = SPEC_VIDEO_SKUS[model.id];
  if (implied === undefined) return null;
  if (model.kind !== 'video') return { path: 'kind', message: `${model.id} is the spec's ${implied} SKU: its kind is video (got ${model.kind})` };
  const explicit = model.video?.kind;
  if (explicit !== undefined && explicit !== implied)
    return { path: 'video', message: `${model.id} is the spec's ${implied} SKU: video.kind may be left out, or be ${implied} (got ${explicit})` };
  return null;
}
