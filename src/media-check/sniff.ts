/**
 * A file's format from its first bytes: a server's Content-Type is often generic
 * (`application/octet-stream`) or wrong, the bytes are what the upstream will decode. Names are the ones
 * the spec's limits table uses (`jpg`, `mov`, `m4a`, …).
 */

const ascii = (bytes: Uint8Array, start: number, length: number) => Buffer.from(bytes.subarray(start, start + length)).toString('latin1');

const startsWith = (bytes: Uint8Array, magic: readonly number[], at = 0) => magic.every((b, i) => bytes[at + i] === b);

/** The formats image-size reads dimensions of. */
export const IMAGE_FORMATS: ReadonlySet<string> = new Set(['jpg', 'png', 'webp', 'gif', 'bmp', 'tiff', 'heic', 'avif', 'ico', 'psd', 'jxl']);
/** ISO base media files (mp4box). */
export const ISO_FORMATS: ReadonlySet<string> = new Set(['mp4', 'mov', 'm4a']);
/** Audio music-metadata reads a duration of from a header. */
export const AUDIO_FORMATS: ReadonlySet<string> = new Set(['mp3', 'wav']);

/** The major brand decides what an ISO file is; `m4a` also when only its tracks say so (see media-probe). */
function isoFormat(bytes: Uint8Array): string | null {
  const box = ascii(bytes, 4, 4);
  if (box === 'ftyp') {
    const brand = ascii(bytes, 8, 4);
    if (brand === 'qt  ') return 'mov';
    if (['M4A ', 'M4B ', 'M4P '].includes(brand)) return 'm4a';
    if (['heic', 'heix', 'heim', 'heis', 'mif1', 'msf1'].includes(brand)) return 'heic';
    if (['avif', 'avis'].includes(brand)) return 'avif';
    if (brand.startsWith('3g')) return '3gp';
    return 'mp4';
  }
  // QuickTime files older than the ftyp box start with their movie, data or padding atoms.
  if (['moov', 'mdat', 'wide', 'free', 'skip', 'pnot'].includes(box)) return 'mov';
  return null;
}

/** MPEG audio frame sync with layer III (ADTS AAC has the same sync with layer 0). */
const mp3Frame = (bytes: Uint8Array, at: number) => bytes[at] === 0xff && ((bytes[at + 1] ?? 0) & 0xe6) === 0xe2;

export function sniffFormat(bytes: Uint8Array): string | null {
  if (bytes.length < 4) return null;
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpg';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (ascii(bytes, 0, 4) === 'GIF8') return 'gif';
  if (ascii(bytes, 0, 4) === 'RIFF') {
    const kind = ascii(bytes, 8, 4);
    return kind === 'WEBP' ? 'webp' : kind === 'WAVE' ? 'wav' : kind === 'AVI ' ? 'avi' : null;
  }
  // Before the weaker magics below: a box size can start with any bytes.
  const iso = isoFormat(bytes);
  if (iso) return iso;
  if (ascii(bytes, 0, 2) === 'BM') return 'bmp';
  if (ascii(bytes, 0, 4) === 'II*\0' || ascii(bytes, 0, 4) === 'MM\0*') return 'tiff';
  if (ascii(bytes, 0, 4) === '8BPS') return 'psd';
  if (startsWith(bytes, [0, 0, 1, 0])) return 'ico';
  if (startsWith(bytes, [0xff, 0x0a]) || startsWith(bytes, [0, 0, 0, 0x0c, 0x4a, 0x58, 0x4c, 0x20])) return 'jxl';
  if (startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return bytes.length >= 64 && ascii(bytes, 0, 64).includes('webm') ? 'webm' : 'mkv';
  if (ascii(bytes, 0, 4) === 'fLaC') return 'flac';
  if (ascii(bytes, 0, 4) === 'OggS') return 'ogg';
  if (ascii(bytes, 0, 3) === 'ID3') return 'mp3';
  if (mp3Frame(bytes, 0)) return 'mp3';
  if (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xf6) === 0xf0) return 'aac';
  return null;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  'image/jpeg': 'jpg',
  'image/jpg': 'jpg',
  'image/pjpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/bmp': 'bmp',
  'image/tiff': 'tiff',
  'image/heic': 'heic',
  'image/heif': 'heic',
  'image/avif': 'avif',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/webm': 'webm',
  'video/x-matroska': 'mkv',
  'video/x-msvideo': 'avi',
  'video/3gpp': '3gp',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/vnd.wave': 'wav',
  'audio/mp4': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/m4a': 'm4a',
  'audio/aac': 'aac',
  'audio/flac': 'flac',
  'audio/ogg': 'ogg',
};

/** What a Content-Type claims, for a file whose bytes could not be read or told nothing. */
export function formatOfContentType(contentType: string | null): string | null {
  return contentType === null ? null : (CONTENT_TYPES[contentType] ?? null);
}

/** The size of a leading ID3v2 tag (header, syncsafe size, optional footer), 0 without one. */
export function id3v2Size(bytes: Uint8Array): number {
  if (bytes.length < 10 || ascii(bytes, 0, 3) !== 'ID3') return 0;
  const size = ((bytes[6]! & 0x7f) << 21) | ((bytes[7]! & 0x7f) << 14) | ((bytes[8]! & 0x7f) << 7) | (bytes[9]! & 0x7f);
  const footer = (bytes[5]! & 0x10) !== 0 ? 10 : 0;
  return 10 + size + footer;
}
