/**
 * `GET /files/<name>`: the small real files that result URLs point at, chosen by extension alone
 * (any name works), so a client that downloads or sniffs a result gets the right kind of bytes.
 */
import type { ServerResponse } from 'node:http';
import { AUDIO_CONTENT_TYPES, encodeAudio, isAudioFormat, SAMPLE_RATE } from './audio';
import { PNG_BASE64 } from './protocols/images';

/** Audio files are one-second clips whatever the task's duration: small, and still decodable. */
export const FILE_AUDIO_SAMPLES = SAMPLE_RATE;

const SUBTITLE = 'Simulated subtitle.';

/** by extension: [content-type, bytes] */
const STATIC: Record<string, () => [string, Buffer]> = {
  png: () => ['image/png', Buffer.from(PNG_BASE64, 'base64')],
  // a minimal ISO BMFF header: enough for a content-type sniff, not a playable video
  mp4: () => ['video/mp4', Buffer.from('000000186674797069736f6d0000020069736f6d69736f32', 'hex')],
  srt: () => ['application/x-subrip', Buffer.from(`1\n00:00:00,000 --> 00:00:02,000\n${SUBTITLE}\n\n`)],
  vtt: () => ['text/vtt', Buffer.from(`WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n${SUBTITLE}\n\n`)],
  json: () => ['application/json', Buffer.from(JSON.stringify({ segments: [{ start: 0, end: 2, text: SUBTITLE }] }))],
};

export function fileFor(name: string): [string, Buffer] | undefined {
  const ext = /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase() ?? '';
  if (isAudioFormat(ext)) return [AUDIO_CONTENT_TYPES[ext], encodeAudio(ext, FILE_AUDIO_SAMPLES)];
  return STATIC[ext]?.();
}

export function sendFile(res: ServerResponse, name: string): void {
  const file = fileFor(name);
  if (!file) {
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'file not found' } }));
    return;
  }
  const [contentType, bytes] = file;
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(bytes.length) }).end(bytes);
}
