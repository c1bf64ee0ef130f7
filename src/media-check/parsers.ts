import type { imageSize } from 'image-size';
import type { createFile, MP4BoxBuffer } from 'mp4box';
import type { parseWebStream } from 'music-metadata';

/** The media parsing libraries, loaded by the first probe: most gateways' requests never probe, and
 * together they are some megabytes of heap and a tenth of a second of start (docs/benchmarks.md, "Memory"). */
export interface Parsers {
  readonly imageSize: typeof imageSize;
  readonly createFile: typeof createFile;
  readonly MP4BoxBuffer: typeof MP4BoxBuffer;
  readonly parseWebStream: typeof parseWebStream;
}

let loading: Promise<Parsers> | null = null;

export function loadParsers(): Promise<Parsers> {
  if (loading) return loading;
  loading = Promise.all([import('image-size'), import('mp4box'), import('music-metadata')]).then(([image, mp4, music]) => ({
    imageSize: image.imageSize,
    createFile: mp4.createFile,
    MP4BoxBuffer: mp4.MP4BoxBuffer,
    parseWebStream: music.parseWebStream,
  }));
  // A failed load (a broken install) is tried again by the next probe rather than remembered.
  loading.catch(() => (loading = null));
  return loading;
}
