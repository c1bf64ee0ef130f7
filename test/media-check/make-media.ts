import { crc32, deflateSync } from 'node:zlib';

/** Small real media files made in code, of known dimensions and duration. */

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A greyscale PNG; with `animated`, an APNG of one frame (acTL and fcTL before the image data). */
export function png(width: number, height: number, options: { animated?: boolean } = {}): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.writeUInt8(8, 8); // bit depth
  ihdr.writeUInt8(0, 9); // greyscale
  const rows = Buffer.alloc((width + 1) * height, 0x80);
  for (let y = 0; y < height; y++) rows[y * (width + 1)] = 0; // filter: none
  const animation: Buffer[] = [];
  if (options.animated) {
    const actl = Buffer.alloc(8);
    actl.writeUInt32BE(1, 0); // frames
    const fctl = Buffer.alloc(26);
    fctl.writeUInt32BE(0, 0); // sequence
    fctl.writeUInt32BE(width, 4);
    fctl.writeUInt32BE(height, 8);
    fctl.writeUInt16BE(1, 20); // delay 1/10 s
    fctl.writeUInt16BE(10, 22);
    animation.push(pngChunk('acTL', actl), pngChunk('fcTL', fctl));
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    ...animation,
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A mono 8-bit PCM wav of `seconds` of silence at `rate` Hz (RIFF header + fmt + data). */
export function wav(seconds: number, rate = 8000): Buffer {
  const samples = Math.round(seconds * rate);
  const file = Buffer.alloc(44 + samples, 0x80);
  file.write('RIFF', 0, 'latin1');
  file.writeUInt32LE(36 + samples, 4);
  file.write('WAVE', 8, 'latin1');
  file.write('fmt ', 12, 'latin1');
  file.writeUInt32LE(16, 16);
  file.writeUInt16LE(1, 20); // PCM
  file.writeUInt16LE(1, 22); // mono
  file.writeUInt32LE(rate, 24);
  file.writeUInt32LE(rate, 28); // bytes per second
  file.writeUInt16LE(1, 32); // block align
  file.writeUInt16LE(8, 34); // bits per sample
  file.write('data', 36, 'latin1');
  file.writeUInt32LE(samples, 40);
  return file;
}

/** A real JPEG with `padding` bytes of APP15 segments between its start and the rest (where its size
 * is): a file whose dimensions lie past any bounded read of its first bytes. */
export function jpegWithPadding(jpeg: Buffer, padding: number): Buffer {
  const segments: Buffer[] = [];
  for (let left = padding; left > 0; left -= 65537) {
    const length = Math.min(65535, Math.max(2, left - 2));
    const segment = Buffer.alloc(2 + length);
    segment.writeUInt16BE(0xffef, 0);
    segment.writeUInt16BE(length, 2);
    segments.push(segment);
  }
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);
}

/** A real mp4 whose movie header (`mvhd`) says it lasts `seconds`: a long video without its bytes (the
 * probe reads the length from the header; the samples stay the short clip's). */
export function mp4WithSeconds(mp4: Buffer, seconds: number): Buffer {
  const file = Buffer.from(mp4);
  const at = file.indexOf('mvhd', 0, 'latin1');
  if (at < 0) throw new Error('no mvhd box');
  const version = file.readUInt8(at + 4);
  if (version === 0) {
    const timescale = file.readUInt32BE(at + 4 + 4 + 8);
    file.writeUInt32BE(Math.round(seconds * timescale), at + 4 + 4 + 8 + 4);
  } else {
    const timescale = file.readUInt32BE(at + 4 + 4 + 16);
    file.writeBigUInt64BE(BigInt(Math.round(seconds * timescale)), at + 4 + 4 + 16 + 4);
  }
  return file;
}
