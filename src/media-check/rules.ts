import type { MediaFacts } from './port';

/** A limit of the spec's media table for one kind of input, named in the 400 that refuses a file past it. */
export interface MediaRule {
  /** What the input is, as the message names it: `source video`, `material image`, … */
  readonly what: string;
  readonly formats: readonly string[];
  /** Bytes: at most (inclusive) or under (exclusive) this many. */
  readonly maxBytes?: { readonly value: number; readonly inclusive: boolean };
  /** Every side under this many pixels. */
  readonly maxSideExclusive?: number;
  /** Seconds: at most (inclusive) or under (exclusive). */
  readonly maxDurationS?: { readonly value: number; readonly inclusive: boolean };
  /** The video codecs accepted (`MediaFacts.videoCodec` names), as the message lists them. */
  readonly videoCodecs?: readonly string[];
  /** Frames per second, both ends inclusive. */
  readonly fps?: { readonly min: number; readonly max: number };
  /** Still images only (the spec's "webp static"). */
  readonly staticOnly?: boolean;
}

const MB = 1024 * 1024;

/** The spec's "Media limits for clip inputs" (also applied to digital-human sources). */
export const CLIP_LIMITS = {
  sourceVideo: {
    what: 'source video',
    formats: ['mp4', 'mov'],
    maxBytes: { value: 500 * MB, inclusive: false },
    maxSideExclusive: 2000,
    maxDurationS: { value: 300, inclusive: false },
    videoCodecs: ['h264', 'hevc'],
    fps: { min: 10, max: 60 },
  },
  materialImage: { what: 'material image', formats: ['jpg', 'png', 'webp'], maxSideExclusive: 2000, staticOnly: true },
  materialVideo: { what: 'material video', formats: ['mp4', 'mov'], maxBytes: { value: 500 * MB, inclusive: false }, maxSideExclusive: 2000, maxDurationS: { value: 60, inclusive: true } },
  spokenAudio: { what: 'spoken audio', formats: ['mp3', 'wav', 'm4a'], maxBytes: { value: 120 * MB, inclusive: true }, maxDurationS: { value: 300, inclusive: true } },
  bgm: { what: 'background music', formats: ['mp3', 'wav', 'm4a'], maxBytes: { value: 120 * MB, inclusive: true }, maxDurationS: { value: 300, inclusive: true } },
  cover: { what: 'cover', formats: ['jpg', 'png'], maxBytes: { value: 10 * MB, inclusive: true }, maxSideExclusive: 2000 },
} as const satisfies Record<string, MediaRule>;

/** A material image counts this many seconds towards the materials' total. */
export const MATERIAL_IMAGE_SECONDS = 2;
/** The materials together: at most this many seconds. */
export const MATERIALS_MAX_SECONDS = 300;

const CODEC_NAMES: Readonly<Record<string, string>> = { h264: 'H.264', hevc: 'HEVC' };
const codecName = (codec: string) => CODEC_NAMES[codec] ?? codec;

/** A measure as a message shows it: one decimal, more when one would round a file past a limit back
 * onto it ("must be at most 300 s; … is 300 s"). */
function shown(value: number, limit: number): string {
  for (let places = 1; places <= 6; places++) {
    const rounded = Math.round(value * 10 ** places) / 10 ** places;
    if (rounded !== limit || value === limit) return String(rounded);
  }
  return String(value);
}

/**
 * The first limit a probed file breaks, as the 400's message (naming the input, the limit and what was
 * found), or null. What the probe could not learn is not held against the file: the upstream decides.
 */
export function checkMedia(facts: MediaFacts, rule: MediaRule): string | null {
  const { what } = rule;
  if (facts.format !== null && !rule.formats.includes(facts.format))
    return `${what}: must be ${rule.formats.join(', ')}; ${facts.url} is ${facts.format}`;
  const bytes = rule.maxBytes;
  if (bytes && facts.bytes !== null && (bytes.inclusive ? facts.bytes > bytes.value : facts.bytes >= bytes.value))
    return `${what}: must be ${bytes.inclusive ? 'at most' : 'under'} ${shown(bytes.value / MB, bytes.value / MB)} MB; ${facts.url} is ${shown(facts.bytes / MB, bytes.value / MB)} MB`;
  const side = rule.maxSideExclusive;
  if (side !== undefined && ((facts.width ?? 0) >= side || (facts.height ?? 0) >= side))
    return `${what}: each side must be under ${side} px; ${facts.url} is ${facts.width ?? '?'}x${facts.height ?? '?'}`;
  const duration = rule.maxDurationS;
  if (duration && facts.durationS !== null && (duration.inclusive ? facts.durationS > duration.value : facts.durationS >= duration.value))
    return `${what}: must be ${duration.inclusive ? 'at most' : 'under'} ${duration.value} s; ${facts.url} is ${shown(facts.durationS, duration.value)} s`;
  const codec = facts.videoCodec ?? null;
  if (rule.videoCodecs && codec !== null && !rule.videoCodecs.includes(codec))
    return `${what}: the video must be ${rule.videoCodecs.map(codecName).join(' or ')}; ${facts.url} is ${codecName(codec)}`;
  const fps = facts.fps ?? null;
  if (rule.fps && fps !== null && (fps < rule.fps.min || fps > rule.fps.max))
    return `${what}: must be ${rule.fps.min}-${rule.fps.max} fps; ${facts.url} is ${shown(fps, fps < rule.fps.min ? rule.fps.min : rule.fps.max)} fps`;
  if (rule.staticOnly && facts.animated === true) return `${what}: must be a still image; ${facts.url} is animated`;
  return null;
}
