import { imageFacts } from './image';
import { findMoov } from './iso';
import type { Parsers } from './parsers';
import { id3v2Size, IMAGE_FORMATS, ISO_FORMATS, sniffFormat } from './sniff';

/** The bytes magic numbers need: past them, a file that is none of the known formats is not read on. */
const SNIFF_BYTES = 64;
/** An mp3's first frames after its ID3v2 tag: a Xing/VBRI header is in the first, a constant bitrate
 * shows in the first four (at most 1,441 bytes each). */
const MP3_FRAMES_BYTES = 16 * 1024;

/** A wav's header is complete once the data chunk's header (its size, hence the duration) is in. */
function wavHeaderIn(bytes: Uint8Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 12; at + 8 <= bytes.length; at += 8 + view.getUint32(at + 4, true) + (view.getUint32(at + 4, true) % 2)) {
    if (Buffer.from(bytes.subarray(at, at + 4)).toString('latin1') === 'data') return true;
  }
  return false;
}

/** Whether the first bytes of a file hold what the probe can learn from it within `maxBytes`. */
export function enough(parsers: Parsers, bytes: Buffer, maxBytes: number): boolean {
  const format = sniffFormat(bytes);
  if (format === null) return bytes.length >= SNIFF_BYTES;
  if (IMAGE_FORMATS.has(format)) return imageFacts(parsers, bytes, format) !== null;
  if (ISO_FORMATS.has(format)) {
    const moov = findMoov(bytes);
    return moov.kind !== 'later' || moov.from >= maxBytes;
  }
  if (format === 'mp3') return bytes.length >= id3v2Size(bytes) + MP3_FRAMES_BYTES;
  if (format === 'wav') return wavHeaderIn(bytes);
  return true;
}
