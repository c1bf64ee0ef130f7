/**
 * The music family of the content-generation tasks API, after Suno-style services: a generation
 * `{model, prompt?, lyrics?, style?, title?, instrumental?}` gives two songs; a follow-up
 * `{model, action, …}` works on a song already made (lyrics, extend, cover, stems, wav, video).
 */
import { stripMarkers } from '../scenarios';
import type { Rejection, SubmitContext, Task, TaskResult } from './tasks';

/** Seconds per song when no `task_duration_ms` asks otherwise. */
export const DEFAULT_SONG_SECONDS = 120;
export const SONGS_PER_TASK = 2;
export const MUSIC_ACTIONS = ['lyrics', 'extend', 'cover', 'stems', 'wav', 'video'] as const;
type MusicAction = (typeof MUSIC_ACTIONS)[number];

export interface Song {
  readonly id: string;
  readonly audio_url: string;
  readonly image_url: string;
  readonly title: string;
  readonly duration: number;
}

function text(v: unknown): string {
  return typeof v === 'string' ? stripMarkers(v) : '';
}

/** The body's `title`, else the first four words of the prompt or lyrics, else "Untitled". */
function titleOf(b: Record<string, unknown>, fallback = 'Untitled'): string {
  const explicit = text(b.title);
  if (explicit) return explicit;
  const words = (text(b.prompt) || text(b.lyrics)).split(/\s+/).filter(Boolean).slice(0, 4);
  return words.length > 0 ? words.join(' ') : fallback;
}

/**
 * Two songs sharing the task's delivered duration equally: the task's `duration` is their sum
 * (`task_duration_ms` / 1000, else 2 × 120 s).
 */
function songsResult(s: SubmitContext, title: string, echoed?: Record<string, unknown>): TaskResult {
  const total = s.scenario.taskDurationMs !== undefined ? s.scenario.taskDurationMs / 1000 : SONGS_PER_TASK * DEFAULT_SONG_SECONDS;
  const songs: Song[] = Array.from({ length: SONGS_PER_TASK }, (_, i) => ({
    id: `${s.id}-${i}`,
    audio_url: `${s.baseUrl}/files/${s.id}-${i}.mp3`,
    image_url: `${s.baseUrl}/files/${s.id}-${i}.png`,
    title,
    duration: total / SONGS_PER_TASK,
  }));
  return { content: { songs }, duration: total, ...(echoed ? { echoed } : {}) };
}

export function musicSubmission(b: Record<string, unknown>, s: SubmitContext): TaskResult | Rejection {
  if (!text(b.prompt) && !text(b.lyrics)) {
    return { status: 400, message: 'The parameter `prompt` specified in the request is not valid: a prompt or lyrics is required.' };
  }
  return songsResult(s, titleOf(b));
}

function songsOf(task: Task | undefined): readonly Song[] {
  const songs = task?.result.content.songs;
  return Array.isArray(songs) ? (songs as Song[]) : [];
}

/**
 * The song a follow-up works on: `audio_id` (a song id `<task id>-<i>`), `task_id` (its first song) or
 * any `audio_url`. Ids must name a succeeded music task of this simulator, as a real service would.
 */
function sourceSong(b: Record<string, unknown>, s: SubmitContext): { title: string } | Rejection {
  if (typeof b.audio_url === 'string' && b.audio_url !== '') return { title: 'Untitled' };
  const audioId = typeof b.audio_id === 'string' ? b.audio_id : undefined;
  const taskId = typeof b.task_id === 'string' ? b.task_id : audioId?.replace(/-\d+$/, '');
  if (taskId === undefined) {
    return { status: 400, message: 'The parameter `audio_id` specified in the request is not valid: audio_id, task_id or audio_url is required.' };
  }
  const task = s.tasks.get(taskId);
  const song = songsOf(task).find((x) => audioId === undefined || x.id === audioId);
  if (!task || !song) return { status: 404, message: `The specified song ${audioId ?? taskId} is not found.` };
  if (task.status !== 'succeeded') return { status: 400, message: `The task ${taskId} has not succeeded (status ${task.status}).` };
  return { title: song.title };
}

type File = { name: string; url: string; format: string };

function files(s: SubmitContext, action: Exclude<MusicAction, 'lyrics' | 'extend' | 'cover'>): File[] {
  const at = (suffix: string, format: string): string => `${s.baseUrl}/files/${s.id}${suffix}.${format}`;
  switch (action) {
    case 'stems':
      return [
        { name: 'vocals', url: at('-vocals', 'mp3'), format: 'mp3' },
        { name: 'instrumental', url: at('-instrumental', 'mp3'), format: 'mp3' },
      ];
    case 'wav':
      return [{ name: 'audio', url: at('', 'wav'), format: 'wav' }];
    case 'video':
      return [{ name: 'video', url: at('', 'mp4'), format: 'mp4' }];
  }
}

/** Lyrics for a prompt: a verse of the prompt's words and a chorus of the title. */
export function lyricsFor(prompt: string, title: string): string {
  return `[Verse]\n${prompt}\n\n[Chorus]\n${title}, ${title}`;
}

export function musicAssetSubmission(b: Record<string, unknown>, s: SubmitContext): TaskResult | Rejection {
  const action = b.action as string;
  if (!(MUSIC_ACTIONS as readonly string[]).includes(action)) {
    return { status: 400, message: `The parameter \`action\` specified in the request is not valid: expected one of ${MUSIC_ACTIONS.join(', ')}.` };
  }
  const echoed = { action };
  if (action === 'lyrics') {
    const prompt = text(b.prompt);
    if (!prompt) return { status: 400, message: 'The parameter `prompt` specified in the request is not valid: lyrics need a prompt.' };
    const title = titleOf(b);
    return { content: { title, lyrics: lyricsFor(prompt, title) }, echoed };
  }
  const source = sourceSong(b, s);
  if ('status' in source) return source;
  if (action === 'extend' || action === 'cover') return songsResult(s, titleOf({ title: b.title, prompt: b.prompt }, source.title), echoed);
  return { content: { files: files(s, action as 'stems' | 'wav' | 'video') }, echoed };
}
