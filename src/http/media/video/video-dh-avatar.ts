import { z } from 'zod';
import { CLIP_LIMITS } from '../../../media-check/rules';
import { presetsOf, resolveAvatar } from './avatars';
import { mediaRefusal, WebUrl } from '../../../media-check/checks';
import { perSecond, perSecondPlan } from './video-standard';
import { DH_LIFETIME_S, DhDuration, sameUpstreamAs, upTo } from './video-dh';
import type { VideoSku } from './video-skus';
import { resolveVoice } from '../speech/voices';

// dh-avatar (spec "Digital-human video"): an avatar (own and ready, or a preset) speaking a driving audio,
// or a text in a voice (an own ready clone, or a preset voice). The output's length follows the audio or
// text; `duration` is only what the reservation is based on.

export const DH_TEXT_MAX = 10_000;
export const DH_TITLE_MAX = 20;

const DhAvatarBody = z.looseObject({
  model: z.string().min(1),
  avatar: z.string().min(1).max(200).describe('An avatar id of this account (ready), or a preset avatar id.'),
  audio_url: WebUrl.optional().describe('A public mp3/wav/m4a link to the driving audio (or `voice` + `text`).'),
  voice: z.string().min(1).max(200).optional().describe('A voice id: an own cloned voice (ready) or a preset voice; with `text`.'),
  text: z.string().min(1).pipe(upTo(DH_TEXT_MAX)).optional().describe(`What the avatar says, up to ${DH_TEXT_MAX} characters; with \`voice\`.`),
  duration: DhDuration,
  title: upTo(DH_TITLE_MAX).optional().describe(`A title, up to ${DH_TITLE_MAX} characters.`),
});
type DhAvatarBody = z.output<typeof DhAvatarBody>;

export const dhAvatarVideo: VideoSku<DhAvatarBody> = {
  schema: DhAvatarBody,
  async prepare(body, model, context) {
    const byAudio = body.audio_url !== undefined;
    const byText = body.voice !== undefined || body.text !== undefined;
    if (byAudio === byText) return { invalid: 'exactly one of audio_url, or voice with text, is required' };
    if (byText && (body.voice === undefined || body.text === undefined)) return { invalid: body.voice === undefined ? 'voice: required with text' : 'text: required with voice' };

    const avatar = await resolveAvatar(context.tasks, context.registry, context.accountId, body.avatar);
    if ('invalid' in avatar) return avatar;
    const fields: Record<string, unknown> = { avatar: avatar.reference, duration: body.duration, ...(body.title !== undefined ? { title: body.title } : {}) };
    let voiceChannel = null;
    if (byText) {
      const cloned = await resolveVoice({ tasks: context.tasks }, context.accountId, body.voice!);
      if (cloned !== null && 'invalid' in cloned) return cloned;
      if (cloned === null && !presetsOf(context.registry).voices.some((p) => p.id === body.voice))
        return { invalid: `voice: ${JSON.stringify(body.voice!.slice(0, 200))} is neither a voice this account cloned nor a preset voice` };
      if (cloned !== null) voiceChannel = context.registry.config.channels.find((c) => c.id === cloned.channelId) ?? null;
      fields.voice = cloned === null ? body.voice : cloned.upstreamVoice;
      fields.text = body.text;
    } else {
      const refused = await mediaRefusal(context.mediaProbe, [{ field: 'audio_url', url: body.audio_url!, rule: CLIP_LIMITS.spokenAudio }]);
      if (refused) return { invalid: refused };
      fields.audio_url = body.audio_url;
    }
    const channels = sameUpstreamAs([avatar.channel, voiceChannel]);
    return { ...perSecondPlan(perSecond(model, undefined), body.duration), params: {}, fields, lifetimeS: DH_LIFETIME_S, ...(channels ? { channels } : {}) };
  },
  reservation: (body, model) => perSecondPlan(perSecond(model, undefined), body.duration).reserved,
};
