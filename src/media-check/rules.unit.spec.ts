import { describe, expect, it } from 'vitest';
import type { MediaFacts } from './port';
import { CLIP_LIMITS, checkMedia } from './rules';

const MB = 1024 * 1024;
const URL = 'https://cdn.example/a';

/** Facts of which nothing is known but what a case sets. */
const facts = (known: Partial<MediaFacts>): MediaFacts => ({ url: URL, contentType: null, bytes: null, format: null, width: null, height: null, durationS: null, ...known });

describe('checkMedia: the spec\'s "Media limits for clip inputs"', () => {
  it('passes a file of which nothing could be learnt, for every input', () => {
    for (const rule of Object.values(CLIP_LIMITS)) expect(checkMedia(facts({}), rule)).toBeNull();
  });

  it('refuses a format the input does not take, naming the formats', () => {
    expect(checkMedia(facts({ format: 'webm' }), CLIP_LIMITS.sourceVideo)).toBe(`source video: must be mp4, mov; ${URL} is webm`);
    expect(checkMedia(facts({ format: 'gif' }), CLIP_LIMITS.materialImage)).toBe(`material image: must be jpg, png, webp; ${URL} is gif`);
    expect(checkMedia(facts({ format: 'webp' }), CLIP_LIMITS.cover)).toBe(`cover: must be jpg, png; ${URL} is webp`);
    expect(checkMedia(facts({ format: 'mp4' }), CLIP_LIMITS.spokenAudio)).toBe(`spoken audio: must be mp3, wav, m4a; ${URL} is mp4`);
    for (const format of ['mp4', 'mov']) expect(checkMedia(facts({ format }), CLIP_LIMITS.materialVideo)).toBeNull();
    for (const format of ['mp3', 'wav', 'm4a']) expect(checkMedia(facts({ format }), CLIP_LIMITS.bgm)).toBeNull();
  });

  it('sizes: videos under 500 MB (500 MB refused), audio at most 120 MB (120 MB passes), covers at most 10 MB', () => {
    expect(checkMedia(facts({ bytes: 500 * MB - 1 }), CLIP_LIMITS.sourceVideo)).toBeNull();
    expect(checkMedia(facts({ bytes: 500 * MB }), CLIP_LIMITS.sourceVideo)).toBe(`source video: must be under 500 MB; ${URL} is 500 MB`);
    expect(checkMedia(facts({ bytes: 500 * MB }), CLIP_LIMITS.materialVideo)).toMatch(/^material video: must be under 500 MB/);
    expect(checkMedia(facts({ bytes: 120 * MB }), CLIP_LIMITS.spokenAudio)).toBeNull();
    // Shown with the decimals that tell it from the limit.
    expect(checkMedia(facts({ bytes: 120 * MB + 1000 }), CLIP_LIMITS.spokenAudio)).toBe(`spoken audio: must be at most 120 MB; ${URL} is 120.001 MB`);
    expect(checkMedia(facts({ bytes: 130 * MB }), CLIP_LIMITS.bgm)).toBe(`background music: must be at most 120 MB; ${URL} is 130 MB`);
    expect(checkMedia(facts({ bytes: 10 * MB }), CLIP_LIMITS.cover)).toBeNull();
    expect(checkMedia(facts({ bytes: 10 * MB + 1 }), CLIP_LIMITS.cover)).toMatch(/^cover: must be at most 10 MB; .* is 10\.000001 MB$/);
    // Material images have no size limit.
    expect(checkMedia(facts({ bytes: 900 * MB }), CLIP_LIMITS.materialImage)).toBeNull();
  });

  it('dimensions: each side under 2000 px (1999 passes, 2000 either way refused); audio has none', () => {
    expect(checkMedia(facts({ width: 1999, height: 1999 }), CLIP_LIMITS.materialImage)).toBeNull();
    expect(checkMedia(facts({ width: 2000, height: 10 }), CLIP_LIMITS.materialImage)).toBe(`material image: each side must be under 2000 px; ${URL} is 2000x10`);
    expect(checkMedia(facts({ width: 1080, height: 2000 }), CLIP_LIMITS.sourceVideo)).toBe(`source video: each side must be under 2000 px; ${URL} is 1080x2000`);
    expect(checkMedia(facts({ width: 3840, height: 2160 }), CLIP_LIMITS.materialVideo)).toMatch(/^material video: each side/);
    expect(checkMedia(facts({ width: 2048, height: 2048 }), CLIP_LIMITS.cover)).toMatch(/^cover: each side/);
    expect(checkMedia(facts({ width: 4000, height: 4000 }), CLIP_LIMITS.bgm)).toBeNull();
  });

  it('durations: source video under 300 s, material video at most 60 s, audio at most 300 s', () => {
    expect(checkMedia(facts({ durationS: 299.9 }), CLIP_LIMITS.sourceVideo)).toBeNull();
    expect(checkMedia(facts({ durationS: 300 }), CLIP_LIMITS.sourceVideo)).toBe(`source video: must be under 300 s; ${URL} is 300 s`);
    expect(checkMedia(facts({ durationS: 60 }), CLIP_LIMITS.materialVideo)).toBeNull();
    expect(checkMedia(facts({ durationS: 60.04 }), CLIP_LIMITS.materialVideo)).toBe(`material video: must be at most 60 s; ${URL} is 60.04 s`);
    expect(checkMedia(facts({ durationS: 300 }), CLIP_LIMITS.spokenAudio)).toBeNull();
    expect(checkMedia(facts({ durationS: 301 }), CLIP_LIMITS.spokenAudio)).toBe(`spoken audio: must be at most 300 s; ${URL} is 301 s`);
    expect(checkMedia(facts({ durationS: 300.5 }), CLIP_LIMITS.bgm)).toBe(`background music: must be at most 300 s; ${URL} is 300.5 s`);
    // An image's duration is the clip's business (2 s each), not a limit.
    expect(checkMedia(facts({ durationS: 1000 }), CLIP_LIMITS.materialImage)).toBeNull();
  });

  it('source video: H.264 or HEVC at 10-60 fps (both ends pass); other inputs take any codec', () => {
    expect(checkMedia(facts({ videoCodec: 'h264', fps: 10 }), CLIP_LIMITS.sourceVideo)).toBeNull();
    expect(checkMedia(facts({ videoCodec: 'hevc', fps: 60 }), CLIP_LIMITS.sourceVideo)).toBeNull();
    expect(checkMedia(facts({ videoCodec: 'av1' }), CLIP_LIMITS.sourceVideo)).toBe(`source video: the video must be H.264 or HEVC; ${URL} is av1`);
    expect(checkMedia(facts({ fps: 9.99 }), CLIP_LIMITS.sourceVideo)).toBe(`source video: must be 10-60 fps; ${URL} is 9.99 fps`);
    expect(checkMedia(facts({ fps: 120 }), CLIP_LIMITS.sourceVideo)).toBe(`source video: must be 10-60 fps; ${URL} is 120 fps`);
    expect(checkMedia(facts({ videoCodec: 'av1', fps: 120 }), CLIP_LIMITS.materialVideo)).toBeNull();
    expect(checkMedia(facts({ videoCodec: null, fps: null }), CLIP_LIMITS.sourceVideo)).toBeNull();
  });

  it('material images must be still; covers and unknown animation pass', () => {
    expect(checkMedia(facts({ format: 'webp', animated: true }), CLIP_LIMITS.materialImage)).toBe(`material image: must be a still image; ${URL} is animated`);
    expect(checkMedia(facts({ format: 'webp', animated: false }), CLIP_LIMITS.materialImage)).toBeNull();
    expect(checkMedia(facts({ format: 'webp', animated: null }), CLIP_LIMITS.materialImage)).toBeNull();
    expect(checkMedia(facts({ format: 'png', animated: true }), CLIP_LIMITS.cover)).toBeNull();
  });

  it('names the first limit broken: format, then size, sides, duration, codec, frame rate, animation', () => {
    const everything = facts({ format: 'webm', bytes: 600 * MB, width: 4000, height: 4000, durationS: 900, videoCodec: 'vp9', fps: 5 });
    expect(checkMedia(everything, CLIP_LIMITS.sourceVideo)).toMatch(/is webm$/);
    expect(checkMedia({ ...everything, format: 'mp4' }, CLIP_LIMITS.sourceVideo)).toMatch(/under 500 MB/);
    expect(checkMedia({ ...everything, format: 'mp4', bytes: 1 }, CLIP_LIMITS.sourceVideo)).toMatch(/each side/);
    expect(checkMedia({ ...everything, format: 'mp4', bytes: 1, width: 1, height: 1 }, CLIP_LIMITS.sourceVideo)).toMatch(/under 300 s/);
    expect(checkMedia({ ...everything, format: 'mp4', bytes: 1, width: 1, height: 1, durationS: 1 }, CLIP_LIMITS.sourceVideo)).toMatch(/H\.264 or HEVC/);
  });
});
