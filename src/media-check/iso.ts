import type { Movie, Track } from 'mp4box';
import type { Parsers } from './parsers';

/**
 * mp4, mov and m4a: everything the probe wants (duration, the video's size, codec and frame rate) is in
 * the `moov` box. A "fast start" file has it before the media data, within the first bytes; many files
 * (phone recordings, ffmpeg's default) have it at the end, after an `mdat` of the whole file's size.
 */

export interface TopBox {
  readonly type: string;
  readonly start: number;
  /** Past the last byte; null: the box runs to the end of the file (size 0). */
  readonly end: number | null;
}

/** The top-level boxes whose headers lie within `bytes` (read from file offset `base`). */
export function topBoxes(bytes: Uint8Array, base = 0): TopBox[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const boxes: TopBox[] = [];
  let at = 0;
  while (at + 8 <= bytes.length) {
    const size32 = view.getUint32(at);
    const type = Buffer.from(bytes.subarray(at + 4, at + 8)).toString('latin1');
    let size: number | null;
    if (size32 === 1) {
      if (at + 16 > bytes.length) break;
      size = Number(view.getBigUint64(at + 8));
    } else size = size32 === 0 ? null : size32;
    if (size !== null && size < 8) break; // corrupt: walking on would loop or misread
    boxes.push({ type, start: base + at, end: size === null ? null : base + at + size });
    if (size === null) break;
    at += size;
  }
  return boxes;
}

export type MoovSearch =
  /** The whole moov is within the bytes: [start, end) of `bytes`. */
  | { readonly kind: 'found'; readonly start: number; readonly end: number }
  /** Not within the bytes: the moov, or the next top-level box to look at, starts at this file offset. */
  | { readonly kind: 'later'; readonly from: number }
  /** There is none to find (a box running to the end of the file came first, or corrupt boxes). */
  | { readonly kind: 'none' };

export function findMoov(bytes: Uint8Array, base = 0): MoovSearch {
  const boxes = topBoxes(bytes, base);
  for (const box of boxes) {
    if (box.type === 'moov') {
      if (box.end !== null && box.end <= base + bytes.length) return { kind: 'found', start: box.start - base, end: box.end - base };
      return { kind: 'later', from: box.start };
    }
  }
  const last = boxes.at(-1);
  if (!last) return bytes.length < 16 ? { kind: 'later', from: base } : { kind: 'none' };
  if (last.end === null) return { kind: 'none' };
  return { kind: 'later', from: last.end };
}

export interface IsoFacts {
  readonly durationS: number | null;
  readonly width: number | null;
  readonly height: number | null;
  readonly videoCodec: string | null;
  readonly fps: number | null;
  readonly hasVideo: boolean;
  readonly hasAudio: boolean;
}

/** `avc1.64000c` → `h264`, `hvc1.1.6.L30.90` → `hevc`; other sample entries by their four-cc. */
function codecName(codec: string): string {
  const fourcc = codec.split('.')[0] ?? codec;
  const names: Record<string, string> = { avc1: 'h264', avc3: 'h264', hvc1: 'hevc', hev1: 'hevc', av01: 'av1', vp09: 'vp9', vp08: 'vp8', mp4v: 'mpeg4' };
  return names[fourcc] ?? fourcc;
}

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;

function movieDuration(movie: Movie): number | null {
  if (movie.duration > 0 && movie.timescale > 0) return movie.duration / movie.timescale;
  if (movie.fragment_duration && movie.fragment_duration.den > 0) return movie.fragment_duration.num / movie.fragment_duration.den;
  return null;
}

/** Frames per second over the whole track (sample count over sample time): a fragmented file's moov has no samples. */
function frameRate(track: Track): number | null {
  if (!(track.nb_samples > 0 && track.samples_duration > 0 && track.timescale > 0)) return null;
  return round(track.nb_samples / (track.samples_duration / track.timescale), 3);
}

/**
 * The facts of a moov box, given with the file's `ftyp` (mp4box wants a file). Null when mp4box cannot
 * read it. mp4box reports some boxes it does not know (QuickTime `udta` atoms) on console.error with no
 * way to turn that off; the parse is synchronous, so the console is quiet just for its duration.
 */
export function parseMoov(parsers: Parsers, ftyp: Uint8Array | null, moov: Uint8Array): IsoFacts | null {
  const file = Buffer.concat([ftyp ?? new Uint8Array(0), moov]);
  const iso = parsers.createFile();
  let movie: Movie | null = null;
  iso.onReady = (m) => (movie = m);
  iso.onError = () => {};
  const quiet = console.error;
  console.error = () => {};
  try {
    iso.appendBuffer(parsers.MP4BoxBuffer.fromArrayBuffer(file.buffer.slice(file.byteOffset, file.byteOffset + file.length), 0), true);
    iso.flush();
  } catch {
    return null;
  } finally {
    console.error = quiet;
  }
  const m = movie as Movie | null;
  if (!m) return null;
  const video = m.videoTracks[0];
  return {
    durationS: movieDuration(m),
    width: video ? (video.video?.width ?? video.track_width) || null : null,
    height: video ? (video.video?.height ?? video.track_height) || null : null,
    videoCodec: video ? codecName(video.codec) : null,
    fps: video ? frameRate(video) : null,
    hasVideo: m.videoTracks.length > 0,
    hasAudio: m.audioTracks.length > 0,
  };
}
