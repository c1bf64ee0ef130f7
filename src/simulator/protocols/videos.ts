/**
 * The video family of the content-generation tasks API (ModelArk / Seedance style): a submit
 * `{model, content: [{type: text, text}, …], duration?, resolution?, …}` and the content of its result.
 */
import { asArray, asRecord } from '../conversation';
import type { Rejection, SubmitContext, TaskResult } from './tasks';

export const VIDEO_FPS = 24;

/** Frame size used for the token count, by resolution (16:9). */
const DIMS: Record<string, [number, number]> = {
  '480p': [864, 480],
  '720p': [1280, 720],
  '1080p': [1920, 1080],
  '2k': [2560, 1440],
  '4k': [3840, 2160],
};

/** completion_tokens = ceil(W × H × 24 fps × duration / 1024), W × H of the resolution at 16:9. */
export function videoTokens(resolution: string, duration: number): number {
  const [w, h] = DIMS[resolution.toLowerCase()] ?? DIMS['720p']!;
  return Math.ceil((w * h * VIDEO_FPS * duration) / 1024);
}

export function videoPrompt(body: unknown): string {
  return asArray(asRecord(body).content)
    .map(asRecord)
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string)
    .join('\n');
}

/** `--duration 5` / `--dur 5` style flags in the prompt text. */
function flag(text: string, names: string[]): string | undefined {
  for (const name of names) {
    const m = new RegExp(`--${name}\\s+(\\S+)`).exec(text);
    if (m) return m[1];
  }
  return undefined;
}

const ECHOED = ['ratio', 'resolution', 'seed', 'frames', 'generate_audio', 'watermark', 'camera_fixed'];

/** Subtitled models deliver one subtitle file per `subtitle_languages` entry (default English). */
function outputFiles(b: Record<string, unknown>, s: SubmitContext): Array<{ language: string; url: string }> {
  const asked = asArray(b.subtitle_languages).filter((l): l is string => typeof l === 'string' && l !== '');
  return (asked.length > 0 ? asked : ['en']).map((language) => ({ language, url: `${s.baseUrl}/files/${s.id}.${language}.srt` }));
}

/** Body `duration` (whole seconds) or `--duration N` in the text, default 5; `task_duration_ms` overrides, fractional. */
function durationOf(b: Record<string, unknown>, text: string, s: SubmitContext): number {
  if (s.scenario.taskDurationMs !== undefined) return s.scenario.taskDurationMs / 1000;
  const asked = Number(b.duration ?? flag(text, ['duration', 'dur']) ?? 5);
  return Number.isFinite(asked) && asked > 0 ? Math.round(asked) : 5;
}

export function videoSubmission(b: Record<string, unknown>, s: SubmitContext): TaskResult | Rejection {
  const text = videoPrompt(b);
  if (!Array.isArray(b.content) || text === '') {
    return { status: 400, message: 'The parameter `content` specified in the request is not valid: a text item is required.' };
  }
  const duration = durationOf(b, text, s);
  const resolution = String(b.resolution ?? flag(text, ['resolution', 'rs']) ?? '720p');
  const echoed: Record<string, unknown> = {};
  for (const key of ECHOED) if (b[key] !== undefined) echoed[key] = b[key];
  const tokens = videoTokens(resolution, duration);
  const subtitled = typeof b.model === 'string' && b.model.toLowerCase().includes('subtitle');
  return {
    content: {
      video_url: `${s.baseUrl}/files/${s.id}.mp4`,
      ...(b.return_last_frame === true ? { last_frame_url: `${s.baseUrl}/files/${s.id}-last.png` } : {}),
      ...(subtitled ? { output_files: outputFiles(b, s) } : {}),
    },
    duration,
    framespersecond: VIDEO_FPS,
    usage: { completion_tokens: tokens, total_tokens: tokens },
    echoed,
  };
}
