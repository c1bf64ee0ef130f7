import { z } from 'zod';
import { CLIP_LIMITS } from '../../probe/rules';
import { firstRefusal, mediaRefusal } from './probed-url';
import { perSecond } from './video-standard';
import { DH_LIFETIME_S, DhDuration, dhPlan, WebUrl } from './video-dh';
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
    const refused = await firstRefusal([
      mediaRefusal(context.probe, 'source_video_url', body.source_video_url, CLIP_LIMITS.sourceVideo),
      mediaRefusal(context.probe, 'audio_url', body.audio_url, CLIP_LIMITS.spokenAudio),
    ]);
    if (refused) return { invalid: refused };
    const fields = { source_video_url: body.source_video_url, audio_url: body.audio_url, duration: body.duration };
    return { ...dhPlan(perSecond(model, undefined), body.duration), params: {}, fields, lifetimeS: DH_LIFETIME_S };
  },
  reservation: (body, model) => dhPlan(perSecond(model, undefined), body.duration).reserved,
};
