import type { Parsers } from './parsers';
import { id3v2Size } from './sniff';

/**
 * An mp3's or wav's duration from its first bytes, with music-metadata. A wav says it in its header (the
 * data chunk's size over the byte rate); an mp3 in a Xing/Info or VBRI header of its first frame when it
 * has one; without one, a constant-bitrate mp3's duration is estimated from the whole file's size.
 */
export async function audioDuration(parsers: Parsers, prefix: Uint8Array, totalBytes: number | null): Promise<number | null> {
  // A web stream, not parseBuffer: a buffer tokenizer takes the prefix's length as the file's size, which
  // makes every size-based estimate a prefix's duration.
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(prefix);
      controller.close();
    },
  });
  const metadata = await parsers.parseWebStream(stream, totalBytes === null ? undefined : { size: totalBytes }, { duration: false, skipCovers: true });
  const { duration, codecProfile, bitrate, container } = metadata.format;
  if (duration !== undefined && Number.isFinite(duration) && duration > 0) return duration;
  // music-metadata estimates a CBR mp3 only once it has seen the file's end (looking for an ID3v1 tag),
  // which a prefix never reaches: the same estimate, from the size and the bitrate of the first frames.
  if (container === 'MPEG' && codecProfile === 'CBR' && bitrate && totalBytes !== null) {
    const audioBytes = totalBytes - id3v2Size(prefix);
    return audioBytes > 0 ? (audioBytes * 8) / bitrate : null;
  }
  return null;
}
