import { UPSTREAM_LINK_TTL_S, type Delivery, type DeliveryOf } from '../delivery';

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const record = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/** A song as polls show it. Its id is the gateway's (`<task id>-<index>`): clients never see the upstream's. */
export interface Song {
  readonly id: string;
  readonly audio_url: string;
  readonly image_url?: string;
  readonly title?: string;
  readonly duration?: number;
}

/** The gateway's id of a task's song: what `POST /v1/music/assets` takes as `song_id`. */
export const songId = (taskId: string, index: number) => `${taskId}-${index}`;

/** A `song_id` read back: the task it belongs to and its index; null when it is no song id of the gateway's. */
export function parseSongId(id: string): { taskId: string; index: number } | null {
  const match = /^(.+)-(\d{1,3})$/.exec(id);
  return match ? { taskId: match[1]!, index: Number(match[2]) } : null;
}

/** Follow-ups whose result is files (stems, a wav, a video), not songs. */
const FILE_ACTIONS = new Set(['stems', 'wav', 'video']);

// One call is billed whatever the call made: two songs, a pair of stems or a page of lyrics.
const oneCall = (result: Record<string, unknown>, urls: readonly string[], expiresAt: number | null): Delivery => ({
  result,
  units: 1,
  unitCount: 1,
  resultUrls: urls,
  resultExpiresAt: expiresAt,
});

/**
 * A succeeded music task (a generation, or a follow-up of `POST /v1/music/assets`, told apart by the
 * `action` its params echo). Billed one call (`unit_type` call). The result keeps what polls show —
 * `songs` (generation, extend, cover), `files` (stems, wav, video) or `lyrics` — with `expires_at` when it
 * has links, and, never shown, the upstream's song ids (`upstream_song_ids`, by index), which a follow-up
 * on a song sends upstream. A result without what its action makes is invalid: failed, refunded.
 */
export const musicDelivery: DeliveryOf = (task, state, now) => {
  const content = task.content ?? {};
  const action = typeof state.params.action === 'string' ? state.params.action : null;
  const expiresAt = now + UPSTREAM_LINK_TTL_S;

  if (action === 'lyrics') {
    const lyrics = text(content.lyrics) ?? text(content.text);
    if (!lyrics) return { invalid: 'the upstream reported success without lyrics' };
    const title = text(content.title);
    return oneCall({ lyrics: { ...(title ? { title } : {}), text: lyrics } }, [], null);
  }

  if (action !== null && FILE_ACTIONS.has(action)) {
    const raw = Array.isArray(content.files) ? content.files : [];
    const files: Array<Record<string, unknown>> = [];
    for (const item of raw) {
      const file = record(item);
      const url = text(file?.url);
      if (!url) return { invalid: `the upstream reported a ${action} file without a url` };
      const name = text(file?.name);
      const format = text(file?.format);
      files.push({ ...(name ? { name } : {}), url, ...(format ? { format } : {}) });
    }
    if (files.length === 0) return { invalid: `the upstream reported success without ${action} files` };
    return oneCall({ files, expires_at: expiresAt }, files.map((f) => f.url as string), expiresAt);
  }

  const raw = Array.isArray(content.songs) ? content.songs : [];
  const songs: Song[] = [];
  const upstreamIds: Array<string | null> = [];
  for (const [index, item] of raw.entries()) {
    const song = record(item);
    const audioUrl = text(song?.audio_url);
    if (!audioUrl) return { invalid: `the upstream reported song ${index} without an audio_url` };
    const imageUrl = text(song?.image_url);
    const title = text(song?.title);
    const duration = typeof song?.duration === 'number' && Number.isFinite(song.duration) && song.duration >= 0 ? song.duration : undefined;
    songs.push({ id: songId(state.taskId, index), audio_url: audioUrl, ...(imageUrl ? { image_url: imageUrl } : {}), ...(title ? { title } : {}), ...(duration !== undefined ? { duration } : {}) });
    upstreamIds.push(text(song?.id) ?? null);
  }
  if (songs.length === 0) return { invalid: 'the upstream reported success without songs' };
  return oneCall({ songs, expires_at: expiresAt, upstream_song_ids: upstreamIds }, songs.map((s) => s.audio_url), expiresAt);
};
