/**
 * The digital-human videos of the content-generation tasks API (dh-avatar, lip-sync, motion transfer): a
 * submit names `avatar` (with `audio_url`, or `voice` + `text`), or a `source_video_url` (with `audio_url`
 * for lip-sync, `content` image items for motion transfer). The result is a video like the video family's.
 */
import { asArray, asRecord } from '../conversation';
import type { Rejection, SubmitContext, TaskResult } from './tasks';
import { VIDEO_FPS } from './videos';

/** The default length of a digital-human video: body `duration`, else this many seconds. */
export const DH_DEFAULT_SECONDS = 5;

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

function invalid(b: Record<string, unknown>, s: SubmitContext): Rejection | null {
  if (b.avatar !== undefined) {
    if (!nonEmpty(b.avatar)) return { status: 400, message: 'The parameter `avatar` specified in the request is not valid.' };
    // An avatar this simulator made must exist and be ready; any other id counts as a platform preset.
    if (b.avatar.startsWith('cgt-sim')) {
      const made = s.tasks.get(b.avatar);
      if (!made || made.family !== 'avatar') return { status: 404, message: `The specified avatar ${b.avatar} is not found.` };
      if (made.status !== 'succeeded') return { status: 400, message: `The avatar ${b.avatar} is not ready (${made.status}).` };
    }
    const spoken = nonEmpty(b.voice) && nonEmpty(b.text);
    if (nonEmpty(b.audio_url) === spoken) return { status: 400, message: 'Exactly one of `audio_url` or `voice` with `text` is required.' };
    return null;
  }
  if (!nonEmpty(b.source_video_url)) return { status: 400, message: 'The parameter `source_video_url` specified in the request is not valid.' };
  const images = asArray(b.content).map(asRecord).filter((c) => c.type === 'image_url');
  if (images.length === 0 && !nonEmpty(b.audio_url)) return { status: 400, message: 'A lip-sync needs `audio_url`; a motion transfer needs `content` images.' };
  return null;
}

export function digitalHumanSubmission(b: Record<string, unknown>, s: SubmitContext): TaskResult | Rejection {
  const refused = invalid(b, s);
  if (refused) return refused;
  const asked = Number(b.duration ?? DH_DEFAULT_SECONDS);
  const duration = s.scenario.taskDurationMs !== undefined ? s.scenario.taskDurationMs / 1000 : Number.isFinite(asked) && asked > 0 ? asked : DH_DEFAULT_SECONDS;
  return { content: { video_url: `${s.baseUrl}/files/${s.id}.mp4` }, duration, framespersecond: VIDEO_FPS };
}
