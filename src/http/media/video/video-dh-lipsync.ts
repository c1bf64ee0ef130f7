import { z } from 'zod';
import { CLIP_LIMITS } from '../../../media-check/rules';
import { mediaRefusal, WebUrl } from '../../../media-check/checks';
import { perSecond, perSecondPlan } from './video-standard';
import { DH_LIFETIME_S, DhDuration } from './video-dh';
import type { VideoSku } from './video-skus';

// Lip-sync (dh-lipsync, dh-lipsync-pro, dh-lipsync-max): a source video's lips moved to an audio. The
// output's length follows the audio; `duration` is only what the reservation is based on.

const LipSyncBody = z.looseObject({
  model: z.string().min(1),
  source_video_url: WebUrl.describe('A public mp4/mov link to the video whose lips move.'),
  audio_url: WebUrl.describe('A public mp3/wav/m4a link to the audio they speak.'),
  duration: DhDuration,
});
type LipSyncBody = z.output<typeof LipSyncBody>;

export const dhLipSyncVideo: VideoSku<LipSyncBody> = {
  schema: LipSyncBody,
  async prepare(body, model, context) {
    const refused = await mediaRefusal(context.mediaProbe, [
      { field: 'source_video_url', url: body.source_video_url, rule: CLIP_LIMITS.sourceVideo },
      { field: 'audio_url', url: body.audio_url, rule: CLIP_LIMITS.spokenAudio },
    ]);
    if (refused) return { invalid: refused };
    const fields = { source_video_url: body.source_video_url, audio_url: body.audio_url, duration: body.duration };
    return { ...perSecondPlan(perSecond(model, undefined), body.duration), params: {}, fields, lifetimeS: DH_LIFETIME_S };
  },
  reservation: (body, model) => perSecondPlan(perSecond(model, undefined), body.duration).reserved,
};
