import { urlRefusal } from '../../../media-check/checks';
import { MAX_VIDEO_SECONDS } from '../../../tasks/families/video';
import { z } from 'zod';
import type { ModelConfig, VideoRules } from '../../../config/schema';
import { parseUsd } from '../../../money/usd';
import type { VideoPlan, VideoSku } from './video-skus';

// The standard video SKU: text (and image, video, audio references) to video, billed per delivered second
// by resolution tier, or per token for a reference video on the token-billed SKUs.

/** Without `duration` the reservation counts this many seconds (the spec's 12 s). */
export const DEFAULT_VIDEO_SECONDS = 12;
/** A token-billed task (a reference video) reserves its duration plus this many seconds. */
export const TOKEN_BILLING_EXTRA_SECONDS = 30;
/** How long a video task may run before the gateway gives up on it, unless `execution_expires_after` says. */
export const VIDEO_LIFETIME_S = 2 * 3600;
const LIFETIME_BOUNDS_S = { min: 3600, max: 48 * 3600 };
export const MAX_REFERENCE_IMAGES = 10;
/** The spec's fields echoed by polls when sent (the sentinels `seed: -1` and `ratio: adaptive` are not). */
const ECHOED = ['ratio', 'resolution', 'frames', 'seed', 'generate_audio', 'output_format', 'service_tier', 'safety_identifier', 'execution_expires_after', 'draft'] as const;

const Url = z.string().min(1).max(2_000_000);
const IMAGE_ROLES = ['first_frame', 'last_frame', 'reference_image'] as const;
const ContentItem = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text'), text: z.string().min(1) }),
  z.looseObject({ type: z.literal('image_url'), image_url: z.looseObject({ url: Url }), role: z.enum(IMAGE_ROLES).optional() }),
  z.looseObject({ type: z.literal('video_url'), video_url: z.looseObject({ url: Url }), role: z.literal('reference_video').optional() }),
  z.looseObject({ type: z.literal('audio_url'), audio_url: z.looseObject({ url: Url }), role: z.literal('reference_audio').optional() }),
]);

export const VideoBody = z.looseObject({
  model: z.string().min(1),
  content: z.array(ContentItem).min(1).max(64),
  duration: z.number().positive().max(MAX_VIDEO_SECONDS).optional(),
  ratio: z.string().min(1).max(32).optional(),
  resolution: z.string().min(1).max(32).optional(),
  watermark: z.boolean().optional(),
  return_last_frame: z.boolean().optional(),
  seed: z.number().int().min(-1).max(4_294_967_295).optional(),
  frames: z.number().int().positive().max(100_000).optional(),
  generate_audio: z.boolean().optional(),
  output_format: z.string().min(1).max(32).optional(),
  service_tier: z.string().min(1).max(32).optional(),
  safety_identifier: z.string().min(1).max(256).optional(),
  execution_expires_after: z.number().int().positive().optional(),
  draft: z.boolean().optional(),
  camera_fixed: z.boolean().optional(),
  video_mode: z.string().min(1).max(32).optional(),
  portrait_auth: z.boolean().optional(),
});
export type VideoBody = z.output<typeof VideoBody>;

/** Validation beyond the schema: the spec's content rules and the SKU's own. A message means a 400. */
function checkVideo(body: VideoBody, model: ModelConfig): string | null {
  const texts = body.content.filter((c) => c.type === 'text');
  if (texts.length !== 1) return `content: exactly one {type: "text", text} item is required (got ${texts.length})`;
  const images = body.content.filter((c) => c.type === 'image_url');
  if (images.filter((c) => c.role === 'reference_image').length > MAX_REFERENCE_IMAGES) return `content: at most ${MAX_REFERENCE_IMAGES} items with role reference_image`;
  for (const item of body.content) {
    if (item.type === 'image_url') {
      const url = item.image_url.url;
      const web = /^https?:\/\//i.test(url);
      // A real person's likeness goes by public link only, for the upstream's audit trail.
      if (body.portrait_auth === true && !web) return 'content: with portrait_auth, reference images of a real person must be public http(s) URLs, not base64 or data URIs';
      if (!web && !/^data:image\/[\w.+-]+;base64,/i.test(url)) return 'content: an image_url must be an http(s) URL or a data:image/...;base64 URI';
    }
    if (item.type === 'video_url' && !/^https?:\/\//i.test(item.video_url.url)) return 'content: a video_url must be a public http(s) URL';
    if (item.type === 'audio_url' && !/^https?:\/\//i.test(item.audio_url.url)) return 'content: an audio_url must be a public http(s) URL';
  }
  const rules: VideoRules | undefined = model.video;
  if (rules?.resolution_required && body.resolution === undefined) return `resolution: the model ${model.id} requires one of ${(rules.resolutions ?? []).join(', ') || 'its resolutions'}`;
  if (rules?.resolutions && body.resolution !== undefined && !rules.resolutions.includes(body.resolution))
    return `resolution: the model ${model.id} takes ${rules.resolutions.join(', ')}; got "${body.resolution}"`;
  const tiers = model.price.per_second;
  if (tiers !== undefined && typeof tiers !== 'string' && body.resolution !== undefined && tiers[body.resolution] === undefined)
    return `resolution: the model ${model.id} is priced for ${Object.keys(tiers).join(', ')}; got "${body.resolution}"`;
  const hasVideo = body.content.some((c) => c.type === 'video_url');
  if (body.video_mode !== undefined) {
    if (!rules?.video_mode) return `video_mode: the model ${model.id} does not take video_mode`;
    if (!hasVideo) return 'video_mode: needs a reference video (a content item of type video_url)';
    if (body.video_mode === 'extend' && body.duration !== undefined && (body.duration < 2 || body.duration > 10)) return 'duration: extending a video (video_mode extend) adds 2 to 10 seconds';
  }
  if (rules?.token_billing && hasVideo && body.resolution === undefined) return `resolution: required when the content of a ${model.id} task has a video_url item (it is billed per token)`;
  return null;
}

/** The per-second price of the call's tier: the sent resolution, else the model's default, else the dearest tier. */
export function perSecond(model: ModelConfig, resolution: string | undefined): bigint {
  const tiers = model.price.per_second;
  if (tiers === undefined) return 0n;
  if (typeof tiers === 'string') return parseUsd(tiers);
  const tier = resolution ?? model.video?.default_resolution;
  if (tier !== undefined && tiers[tier] !== undefined) return parseUsd(tiers[tier]);
  return Object.values(tiers).reduce((max, price) => (parseUsd(price) > max ? parseUsd(price) : max), 0n);
}

/** price per second × `seconds` held; settled per delivered millisecond, never above the hold (the
 * digital-human and smart-clip SKUs). */
export function perSecondPlan(pricePerSecond: bigint, seconds: number): VideoPlan {
  const basis = Math.round(seconds * 1000);
  return { reserved: (pricePerSecond * BigInt(basis) + 999n) / 1000n, billing: { unit: 'millisecond', price: pricePerSecond, per: 1000, cap: true }, basis };
}

/** The reservation and the billing: per delivered second, or per token for a reference video on the token-billed SKUs. */
export function planVideo(body: VideoBody, model: ModelConfig): VideoPlan {
  const price = perSecond(model, body.resolution);
  const seconds = body.duration ?? DEFAULT_VIDEO_SECONDS;
  if (model.video?.token_billing && body.content.some((c) => c.type === 'video_url')) {
    const perMillion = parseUsd(model.price.per_1m_completion_tokens ?? '0');
    const reserved = (price * BigInt(Math.round((seconds + TOKEN_BILLING_EXTRA_SECONDS) * 1000)) + 999n) / 1000n;
    // The tokens the hold buys: what a task without usage is billed.
    const basis = perMillion === 0n ? 0 : Number((reserved * 1_000_000n) / perMillion);
    return { reserved, billing: { unit: 'token', price: perMillion, per: 1_000_000, cap: true }, basis };
  }
  const basis = Math.round(seconds * 1000);
  // Settled on the delivered length; without a duration the spec lets it pass the 12 s reservation.
  return { reserved: (price * BigInt(basis) + 999n) / 1000n, billing: { unit: 'millisecond', price, per: 1000, cap: body.duration !== undefined }, basis };
}

function echoed(body: VideoBody): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const field of ECHOED) {
    const value = body[field];
    if (value === undefined) continue;
    if (field === 'seed' && value === -1) continue;
    if (field === 'ratio' && value === 'adaptive') continue;
    params[field] = value;
  }
  return params;
}

function lifetimeOf(body: VideoBody): number {
  const asked = body.execution_expires_after;
  if (asked === undefined) return VIDEO_LIFETIME_S;
  return Math.min(LIFETIME_BOUNDS_S.max, Math.max(LIFETIME_BOUNDS_S.min, asked));
}


/** The content's links the upstream fetches, under the URL policy (docs/media.md); data URIs are not links. */
function referencedUrls(body: VideoBody): { field: string; url: string }[] {
  return body.content.flatMap((item, i) => {
    const url = item.type === 'image_url' ? item.image_url.url : item.type === 'video_url' ? item.video_url.url : item.type === 'audio_url' ? item.audio_url.url : null;
    return url !== null && /^https?:\/\//i.test(url) ? [{ field: `content[${i}].${item.type}`, url }] : [];
  });
}

export const standardVideo: VideoSku<VideoBody> = {
  schema: VideoBody,
  async prepare(body, model, context) {
    const invalid = checkVideo(body, model) ?? (await urlRefusal(context.mediaProbe, referencedUrls(body)));
    if (invalid) return { invalid };
    const { model: _model, ...fields } = body;
    return { ...planVideo(body, model), params: echoed(body), fields, lifetimeS: lifetimeOf(body) };
  },
  reservation: (body, model) => planVideo(body, model).reserved,
};
