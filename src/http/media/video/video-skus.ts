import type { z } from 'zod';
import type { ChannelConfig, ModelConfig, VideoKind } from '../../../config/schema';
import { videoKindOf } from '../../../config/video-kind';
import type { TaskBilling } from '../../../events/catalog';
import type { TaskService } from '../../../commands/task/service';
import type { ModelRegistry } from '../../../config/registry';
import type { UrlProbe } from '../../../media-check/port';
import type { ClipTemplates } from '../../../clip/templates';
import { CLIP_VIDEO_SKUS } from './video-clip';
import { dhAvatarVideo } from './video-dh-avatar';
import { dhLipSyncVideo } from './video-dh-lipsync';
import { dhMotionVideo } from './video-dh-motion';
import { standardVideo } from './video-standard';

/** What a video task costs: the hold, how it is settled, and what the hold stands for (TaskCreated.basis). */
export interface VideoPlan {
  readonly reserved: bigint;
  readonly billing: TaskBilling;
  readonly basis: number;
}

/** A video submission ready to go upstream. */
export interface VideoSubmission extends VideoPlan {
  /** What the task's polls echo. */
  readonly params: Record<string, unknown>;
  /** The upstream body, without `model` (each channel sets its own). */
  readonly fields: Record<string, unknown>;
  /** How long the task may run before the gateway expires it, in seconds. */
  readonly lifetimeS: number;
  /** Only these channels (e.g. the one that holds an avatar); absent: every channel of the model. */
  readonly channels?: (channel: ChannelConfig) => boolean;
}

/** What a SKU's rules may look at beyond the body: the calling account's own resources. */
export interface VideoContext {
  readonly accountId: string;
  /** What the gateway may learn of a URL the body names, before any money moves (src/media-check). */
  readonly mediaProbe: UrlProbe;
  /** Smart-clip templates (a `style_id`'s flags), from the model's channels through the gateway's cache. */
  readonly clipTemplates?: ClipTemplates;
  /** The account's avatars and cloned voices, read from their task streams (a dh-avatar's references). */
  readonly tasks: Pick<TaskService, 'state'>;
  /** The config's presets and channels. */
  readonly registry: ModelRegistry;
}

/**
 * One kind of video SKU (`videoKindOf` the model): its body schema, its rules and its plan. The route
 * resolves the model first, then parses and prepares the body with the model's kind.
 */
export interface VideoSku<B> {
  readonly schema: z.ZodType<B>;
  /** The rules beyond the schema (a message: a 400), and the submission. */
  prepare(body: B, model: ModelConfig, context: VideoContext): Promise<VideoSubmission | { readonly invalid: string }>;
  /** The reservation alone: the spend cap an Idempotency-Key replay is checked against. */
  reservation(body: B, model: ModelConfig): bigint;
}

/** Every kind of video SKU; which one a model is: `videoKindOf` (its `video.kind`, else its spec-named id). */
export const VIDEO_SKUS: Readonly<Record<VideoKind, VideoSku<never>>> = {
  standard: standardVideo as VideoSku<never>,
  'clip-realman': CLIP_VIDEO_SKUS['clip-realman'] as VideoSku<never>,
  'clip-mixcut': CLIP_VIDEO_SKUS['clip-mixcut'] as VideoSku<never>,
  'clip-news': CLIP_VIDEO_SKUS['clip-news'] as VideoSku<never>,
  'dh-avatar': dhAvatarVideo as VideoSku<never>,
  'dh-lipsync': dhLipSyncVideo as VideoSku<never>,
  'dh-motion': dhMotionVideo as VideoSku<never>,
};

export function videoSkuOf(model: ModelConfig): VideoSku<unknown> {
  return VIDEO_SKUS[videoKindOf(model)] as VideoSku<unknown>;
}
