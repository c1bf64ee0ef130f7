import { z } from 'zod';
import type { ModelConfig } from '../../../config/schema';
import { parseUsd } from '../../../money/usd';
import { CLIP_LIMITS } from '../../../media-check/rules';
import { mediaRefusal, WebUrl } from '../../../media-check/checks';
import { DH_LIFETIME_S, DhDuration } from './video-dh';
import { perSecondPlan } from './video-standard';
import type { VideoSku } from './video-skus';

// Motion transfer (dh-motion): the motion of a source video carried onto 1-7 people's images. The output's
// length follows the source; `duration` (its length) is only what the reservation is based on. The unit
// price is the `resolution` tier's (fast, standard, max) of `price.per_second`.

/** The spec's "motion faces 1-7". */
export const MOTION_FACES = { min: 1, max: 7 } as const;
export const MOTION_TIERS = ['fast', 'standard', 'max'] as const;
export const DEFAULT_MOTION_TIER = 'standard';

const PersonImage = z.looseObject({ type: z.literal('image_url'), image_url: z.looseObject({ url: WebUrl }) });
/** A text item is not required (the spec's `content[]` holds the person images), but taken when sent and passed on. */
const TextItem = z.looseObject({ type: z.literal('text'), text: z.string().min(1).max(10_000) });
const ContentItem = z.discriminatedUnion('type', [PersonImage, TextItem]);
type PersonImage = z.output<typeof PersonImage>;
const personImages = (content: ReadonlyArray<z.output<typeof ContentItem>>): PersonImage[] => content.filter((item): item is PersonImage => item.type === 'image_url');

const MotionBody = z.looseObject({
  model: z.string().min(1),
  source_video_url: WebUrl.describe('A public mp4/mov link to the video whose motion is carried over.'),
  content: z
    .array(ContentItem)
    .max(MOTION_FACES.max + 1)
    .refine((items) => items.filter((i) => i.type === 'text').length <= 1, 'at most one {type: "text", text} item')
    .refine((items) => {
      const images = personImages(items).length;
      return images >= MOTION_FACES.min && images <= MOTION_FACES.max;
    }, `${MOTION_FACES.min}-${MOTION_FACES.max} person images ({type: "image_url", image_url: {url}}) are required`)
    .describe('1-7 person images, `{type: image_url, image_url: {url}}`; no text item is needed (one is passed on when sent).'),
  face_count: z.number().int().min(MOTION_FACES.min).max(MOTION_FACES.max).optional().describe('How many faces: 1-7, equal to the number of images (default: that number).'),
  resolution: z.enum(MOTION_TIERS).optional().describe('`fast`, `standard` (default) or `max`: the price tier.'),
  duration: DhDuration,
});
type MotionBody = z.output<typeof MotionBody>;

/** The tier's unit price: a tiered `per_second` names each tier; a flat one prices them all. Null: not priced. */
export function motionPrice(model: ModelConfig, tier: string): bigint | null {
  const prices = model.price.per_second;
  if (prices === undefined) return null;
  if (typeof prices === 'string') return parseUsd(prices);
  return prices[tier] === undefined ? null : parseUsd(prices[tier]);
}

export const dhMotionVideo: VideoSku<MotionBody> = {
  schema: MotionBody,
  async prepare(body, model, context) {
    // Each face is one image's person: a count that differs would leave faces without an image or images
    // unused, a task the upstream fails after the money was held.
    const images = personImages(body.content);
    if (body.face_count !== undefined && body.face_count !== images.length)
      return { invalid: `face_count: must equal the number of images in content (${images.length}); got ${body.face_count}` };
    const tier = body.resolution ?? DEFAULT_MOTION_TIER;
    const price = motionPrice(model, tier);
    if (price === null) return { invalid: `resolution: the model ${model.id} is not priced for "${tier}"` };
    const refused = await mediaRefusal(context.mediaProbe, [
      { field: 'source_video_url', url: body.source_video_url, rule: CLIP_LIMITS.sourceVideo },
      ...body.content.flatMap((item, i) => (item.type === 'image_url' ? [{ field: `content[${i}].image_url`, url: item.image_url.url, rule: CLIP_LIMITS.materialImage }] : [])),
    ]);
    if (refused) return { invalid: refused };
    const fields = {
      source_video_url: body.source_video_url,
      content: body.content.map((item) => (item.type === 'image_url' ? { type: 'image_url', image_url: { url: item.image_url.url } } : { type: 'text', text: item.text })),
      face_count: images.length,
      resolution: tier,
      duration: body.duration,
    };
    return { ...perSecondPlan(price, body.duration), params: body.resolution !== undefined ? { resolution: body.resolution } : {}, fields, lifetimeS: DH_LIFETIME_S };
  },
  reservation: (body, model) => perSecondPlan(motionPrice(model, body.resolution ?? DEFAULT_MOTION_TIER) ?? 0n, body.duration).reserved,
};
