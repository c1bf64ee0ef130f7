/**
 * Deterministic audio bytes, for the speech endpoint and the audio files under /files/.
 *
 * Every format holds the same length of 16-bit mono audio at 24 kHz (OpenAI's speech output rate):
 * wav and pcm a quiet 440 Hz tone, the compressed formats silent frames that decoders accept. Sizes
 * follow from the sample count alone, so a test can predict them (see the README's formulas).
 */

export const SAMPLE_RATE = 24_000;
/** Speech length per character of input, at speed 1. */
export const MS_PER_CHARACTER = 60;

export const AUDIO_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

export const AUDIO_CONTENT_TYPES: Record<AudioFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export function isAudioFormat(v: unknown): v is AudioFormat {
  return typeof v === 'string' && (AUDIO_FORMATS as readonly string[]).includes(v);
}

/** samples = round(24000 × 0.060 × characters / speed) = round(1440 × characters / speed). */
export function speechSamples(characters: number, speed = 1): number {
  return Math.round((SAMPLE_RATE * MS_PER_CHARACTER * characters) / (1000 * speed));
}

export function encodeAudio(format: AudioFormat, samples: number): Buffer {
  switch (format) {
    case 'wav':
      return wav(samples);
    case 'pcm':
      return pcm16(samples);
    case 'mp3':
      return mp3(samples);
    case 'aac':
      return aac(samples);
    case 'flac':
      return flac(samples);
    case 'opus':
      return opus(samples);
  }
}

/** 600 samples hold exactly 11 periods of 440 Hz at 24 kHz, so one table serves any length. */
const TONE_PERIOD = 600;
let tone: Buffer | undefined;

function toneTable(): Buffer {
  const t = Buffer.alloc(TONE_PERIOD * 2);
  for (let i = 0; i < TONE_PERIOD; i++) t.writeInt16LE(Math.round(1000 * Math.sin((2 * Math.PI * 440 * i) / SAMPLE_RATE)), i * 2);
  return t;
}

/** Signed 16-bit little-endian, a 440 Hz sine at amplitude 1000 (about −30 dBFS: audible, not loud). */
export function pcm16(samples: number): Buffer {
  tone ??= toneTable();
  const out = Buffer.alloc(samples * 2);
  for (let at = 0; at < out.length; at += tone.length) tone.copy(out, at, 0, Math.min(tone.length, out.length - at));
  return out;
}

/** A canonical 44-byte RIFF/WAVE header (PCM, mono, 16-bit, 24 kHz) and the pcm16 samples. */
export function wav(samples: number): Buffer {
  const data = pcm16(samples);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(SAMPLE_RATE, 24);
  h.writeUInt32LE(SAMPLE_RATE * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

/**
 * MPEG-2 Layer III, 24 kHz, 32 kbit/s, mono, no CRC: header FF F3 44 C0, 96-byte frames of 576 samples.
 * All-zero side information decodes as silence (no Huffman data, gain 0).
 */
export const MP3_FRAME_BYTES = 96;
export const MP3_FRAME_SAMPLES = 576;
export function mp3(samples: number): Buffer {
  const frame = Buffer.alloc(MP3_FRAME_BYTES);
  frame.set([0xff, 0xf3, 0x44, 0xc0]);
  return repeat(frame, Math.ceil(samples / MP3_FRAME_SAMPLES));
}

/**
 * ADTS AAC-LC, 24 kHz, mono: a 7-byte header and the 4-byte raw block `00 00 00 07` (one silent
 * single-channel element with max_sfb 0, then ID_END) per 1024 samples.
 */
export const AAC_FRAME_BYTES = 11;
export const AAC_FRAME_SAMPLES = 1024;
export function aac(samples: number): Buffer {
  const len = AAC_FRAME_BYTES;
  const header = [
    0xff,
    0xf1, // sync, MPEG-4, layer 0, no CRC
    (1 << 6) | (6 << 2), // profile LC, sampling index 6 (24 kHz), channel configuration high bit 0
    (1 << 6) | (len >> 11), // channel configuration 1 (low bits), frame length bits 12–11
    (len >> 3) & 0xff,
    ((len & 7) << 5) | 0x1f, // buffer fullness 0x7FF (variable bitrate)
    0xfc,
  ];
  return repeat(Buffer.from([...header, 0x00, 0x00, 0x00, 0x07]), Math.ceil(samples / AAC_FRAME_SAMPLES));
}

/**
 * FLAC: `fLaC`, STREAMINFO (24 kHz, mono, 16-bit, the total sample count, MD5 unset), then one frame
 * per 4096 samples holding a CONSTANT 0 subframe (12–14 bytes each, CRC-8 and CRC-16 set).
 */
export const FLAC_BLOCK = 4096;
export function flac(samples: number): Buffer {
  const info = Buffer.alloc(4 + 4 + 34);
  info.write('fLaC', 0, 'ascii');
  info.writeUInt32BE(0x8000_0000 + 34, 4); // last metadata block, type STREAMINFO, length 34
  info.writeUInt16BE(FLAC_BLOCK, 8);
  info.writeUInt16BE(FLAC_BLOCK, 10);
  const packed = (BigInt(SAMPLE_RATE) << 44n) | (0n << 41n) | (15n << 36n) | BigInt(samples);
  info.writeBigUInt64BE(packed, 18);
  const frames: Buffer[] = [info];
  for (let n = 0, left = samples; left > 0; n++, left -= FLAC_BLOCK) frames.push(flacFrame(n, Math.min(FLAC_BLOCK, left)));
  return Buffer.concat(frames);
}

function flacFrame(index: number, blockSize: number): Buffer {
  const size = Buffer.alloc(2);
  size.writeUInt16BE(blockSize - 1);
  const header = Buffer.concat([
    Buffer.from([0xff, 0xf8, 0x77, 0x08]), // fixed blocking; 16-bit size at the end, 24 kHz; mono, 16-bit
    Buffer.from(String.fromCodePoint(index), 'utf8'), // FLAC codes frame numbers as UTF-8
    size,
  ]);
  const body = Buffer.concat([header, Buffer.from([crc8(header), 0x00, 0x00, 0x00])]);
  const footer = Buffer.alloc(2);
  footer.writeUInt16BE(crc16(body));
  return Buffer.concat([body, footer]);
}

/**
 * Ogg Opus: an OpusHead page (24 kHz input, pre-skip 0), an OpusTags page, then audio pages of
 * 1-byte packets (TOC 0xF8: CELT full band, 20 ms, a zero-length frame that decoders play as silence);
 * the last page's granule position is exactly the sample count at 48 kHz.
 */
export function opus(samples: number): Buffer {
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'ascii');
  head.writeUInt8(1, 8);
  head.writeUInt8(1, 9);
  head.writeUInt16LE(0, 10);
  head.writeUInt32LE(SAMPLE_RATE, 12);
  const vendor = Buffer.from('simulator', 'ascii');
  const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
  tags.write('OpusTags', 0, 'ascii');
  tags.writeUInt32LE(vendor.length, 8);
  vendor.copy(tags, 12);
  const pages = [oggPage(0x02, 0n, 0, [head]), oggPage(0, 0n, 1, [tags])];
  const packets = Math.ceil(samples / (SAMPLE_RATE / 50));
  const end = BigInt(samples * 2);
  for (let done = 0, seq = 2; done < packets; seq++) {
    const count = Math.min(255, packets - done);
    done += count;
    const granule = done === packets ? end : BigInt(done * 960);
    pages.push(oggPage(done === packets ? 0x04 : 0, granule, seq, Array.from({ length: count }, () => Buffer.from([0xf8]))));
  }
  return Buffer.concat(pages);
}

/** One Ogg page holding whole packets shorter than 255 bytes. */
function oggPage(type: number, granule: bigint, seq: number, packets: Buffer[]): Buffer {
  const h = Buffer.alloc(27);
  h.write('OggS', 0, 'ascii');
  h.writeUInt8(type, 5);
  h.writeBigInt64LE(granule, 6);
  h.writeUInt32LE(0x53494d31, 14); // stream serial "SIM1"
  h.writeUInt32LE(seq, 18);
  h.writeUInt8(packets.length, 26);
  const page = Buffer.concat([h, Buffer.from(packets.map((p) => p.length)), ...packets]);
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

function repeat(unit: Buffer, times: number): Buffer {
  return Buffer.concat(Array.from({ length: times }, () => unit));
}

function crc8(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
  }
  return crc;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x8005) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 24;
    for (let i = 0; i < 8; i++) crc = crc & 0x80000000 ? ((crc << 1) ^ 0x04c11db7) >>> 0 : (crc << 1) >>> 0;
  }
  return crc >>> 0;
}
