import type { ModelConfig } from '../../../config/schema';
import { ALL_LAYERS, checkClipFields, CLIP_SKUS, ClipBody, reservedSeconds, upstreamFields, type ClipKind, type TemplateFlags } from '../../../clip/fields';
import { judgeMedia, mediaChecks } from '../../../clip/media';
import { PROBE_BUDGET_MS, probeMediaUrls } from '../../../media-check/checks';
import type { TemplateLookup } from '../../../clip/templates';
import type { ClipTemplate } from '../../../upstream/protocols/clip-templates';
import { perSecond, perSecondPlan, VIDEO_LIFETIME_S } from './video-standard';
import type { VideoContext, VideoPlan, VideoSku } from './video-skus';

// The smart-clip SKUs (clip-realman, clip-mixcut, clip-news): the body's rules (src/clip/fields.ts), the
// template named by `style_id`, the media limits of every URL, all before any money moves; billed per
// delivered second, 300 s (or a longer `duration`) held.

/** The reservation and billing: per delivered second, capped by the hold. */
export function planClip(kind: ClipKind, body: ClipBody, model: ModelConfig): VideoPlan {
  return perSecondPlan(perSecond(model, undefined), reservedSeconds(kind, body));
}

const UNREAD: TemplateLookup<ClipTemplate> = { kind: 'failed', failure: { kind: 'timeout', message: 'the template could not be read in time' } };

/** `promise`'s value, or `late` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, late: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(late), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The template's flags, or a 400 when it is not one of this SKU's; unknown when it could not be read (passed on). */
async function templateOf(kind: ClipKind, styleId: string, model: ModelConfig, context: VideoContext): Promise<TemplateFlags | { invalid: string }> {
  const templates = context.clipTemplates;
  if (!templates) return ALL_LAYERS;
  // Within the probes' budget: a slow template upstream must not hold the submission (the fetch goes on
  // and fills the cache; the submission goes on as if the template could not be read).
  const lookup = await within(
    templates.template(templates.channelsFor([model]), styleId).catch((): TemplateLookup<ClipTemplate> => UNREAD),
    PROBE_BUDGET_MS,
    UNREAD,
  );
  if (lookup.kind === 'not_found') return { invalid: `style_id: no clip template ${JSON.stringify(styleId)} (GET /v1/videos/clip-templates?scene=${CLIP_SKUS[kind].scene} lists them)` };
  if (lookup.kind === 'failed') return ALL_LAYERS;
  const template: ClipTemplate = lookup.value;
  const scene = CLIP_SKUS[kind].scene;
  if (template.scene !== undefined && template.scene !== scene) return { invalid: `style_id: ${JSON.stringify(styleId)} is a ${template.scene} template; ${kind} takes ${scene} templates` };
  return { hasTitle: template.has_title !== false, hasPersona: template.has_persona !== false };
}

function clipSku(kind: ClipKind): VideoSku<ClipBody> {
  return {
    schema: ClipBody,
    async prepare(body, model, context) {
      const invalid = checkClipFields(kind, body);
      if (invalid) return { invalid };
      const checks = mediaChecks(body);
      // The template and every URL at once: the slowest of them bounds the wait.
      const [flags, probes] = await Promise.all([
        templateOf(kind, body.style_id!, model, context),
        probeMediaUrls(context.mediaProbe, checks.map((c) => c.url)),
      ]);
      if ('invalid' in flags) return flags;
      const broken = judgeMedia(checks, probes);
      if (broken) return { invalid: broken };
      return { ...planClip(kind, body, model), params: {}, fields: upstreamFields(kind, body, flags), lifetimeS: VIDEO_LIFETIME_S };
    },
    reservation: (body, model) => planClip(kind, body, model).reserved,
  };
}

export const CLIP_VIDEO_SKUS: Readonly<Record<ClipKind, VideoSku<ClipBody>>> = {
  'clip-realman': clipSku('clip-realman'),
  'clip-mixcut': clipSku('clip-mixcut'),
  'clip-news': clipSku('clip-news'),
};
