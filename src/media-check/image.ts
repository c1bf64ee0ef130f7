import type { Parsers } from './parsers';

export interface ImageFacts {
  readonly width: number;
  readonly height: number;
  /** Known for webp (the VP8X animation flag) and png (an APNG's acTL chunk); else null. */
  readonly animated: boolean | null;
}

const ascii = (bytes: Uint8Array, start: number, length: number) => Buffer.from(bytes.subarray(start, start + length)).toString('latin1');

function webpAnimated(bytes: Uint8Array): boolean | null {
  if (bytes.length < 21) return null;
  const chunk = ascii(bytes, 12, 4);
  if (chunk === 'VP8 ' || chunk === 'VP8L') return false;
  return chunk === 'VP8X' ? (bytes[20]! & 0x02) !== 0 : null;
}

/** An APNG declares itself with an acTL chunk before the first IDAT. */
function pngAnimated(bytes: Uint8Array): boolean | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 8; at + 8 <= bytes.length; at += 12 + view.getUint32(at)) {
    const type = ascii(bytes, at + 4, 4);
    if (type === 'acTL') return true;
    if (type === 'IDAT') return false;
  }
  return null;
}

/** The image's size from its first bytes (image-size), or null when they do not hold it (yet). */
export function imageFacts(parsers: Parsers, bytes: Uint8Array, format: string): ImageFacts | null {
  let size: { width: number; height: number };
  try {
    size = parsers.imageSize(bytes);
  } catch {
    return null;
  }
  if (!(size.width > 0 && size.height > 0)) return null;
  const animated = format === 'webp' ? webpAnimated(bytes) : format === 'png' ? pngAnimated(bytes) : null;
  return { width: size.width, height: size.height, animated };
}
