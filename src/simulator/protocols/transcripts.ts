/**
 * The transcript family of the content-generation tasks API: `{model, url, language?}` → a text made
 * up from the URL's file name, so a test can predict it without any audio.
 */
import { stripMarkers } from '../scenarios';
import type { Rejection, TaskResult } from './tasks';

/** Spoken length per character of a segment's text, as for speech. */
const MS_PER_CHARACTER = 60;

export interface Transcript {
  readonly text: string;
  readonly language: string;
  readonly segments: ReadonlyArray<{ start: number; end: number; text: string }>;
}

/** `…/team-meeting_2024.mp3?sig=…` → "team meeting 2024"; "audio" when the name has no word. */
function wordsOf(url: string): string {
  const clean = stripMarkers(url);
  let path: string;
  try {
    path = new URL(clean).pathname;
  } catch {
    path = clean.split(/[?#]/)[0] ?? '';
  }
  let name = path.split('/').filter(Boolean).at(-1) ?? '';
  try {
    name = decodeURIComponent(name);
  } catch {
    // a stray % stays as written
  }
  const words = name.replace(/\.[^.]*$/, '').split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  return words.length > 0 ? words.join(' ') : 'audio';
}

/**
 * Two sentences, one segment each, timed back to back at 60 ms per character:
 * "This is a simulated transcript of <words>." and "Nothing in it was heard."
 */
export function transcriptOf(url: string, language = 'en'): Transcript {
  const sentences = [`This is a simulated transcript of ${wordsOf(url)}.`, 'Nothing in it was heard.'];
  let ms = 0;
  const segments = sentences.map((sentence) => {
    const start = ms;
    ms += [...sentence].length * MS_PER_CHARACTER;
    return { start: start / 1000, end: ms / 1000, text: sentence };
  });
  return { text: sentences.join(' '), language, segments };
}

export function transcriptSubmission(b: Record<string, unknown>): TaskResult | Rejection {
  const url = typeof b.url === 'string' ? stripMarkers(b.url) : '';
  if (url === '') return { status: 400, message: 'The parameter `url` specified in the request is not valid.' };
  const language = typeof b.language === 'string' && b.language !== '' ? b.language : 'en';
  return { content: { ...transcriptOf(url, language) } };
}
