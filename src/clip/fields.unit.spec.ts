import { describe, expect, it } from 'vitest';
import { ALL_LAYERS, checkClipFields, CLIP_SKUS, ClipBody, newsDuration, reservedSeconds, upstreamFields, urlsOf, type ClipKind } from './fields';

const parse = (body: Record<string, unknown>) => ClipBody.parse(body);
const img = { type: 'image', file_url: 'https://e.com/a.jpg' };
const VALID: Record<ClipKind, Record<string, unknown>> = {
  'clip-realman': { model: 'm', style_id: 's', source_video_url: 'https://e.com/v.mp4' },
  'clip-mixcut': { model: 'm', style_id: 's', audio_url: 'https://e.com/a.mp3', materials: [img] },
  'clip-news': { model: 'm', style_id: 's', materials: [img], title: 'T' },
};

describe('checkClipFields', () => {
  it.each(Object.keys(VALID) as ClipKind[])('accepts the least body of %s, and refuses it without each required field', (kind) => {
    expect(checkClipFields(kind, parse(VALID[kind]))).toBeNull();
    for (const field of CLIP_SKUS[kind].requires) {
      const { [field]: _gone, ...body } = VALID[kind];
      expect(checkClipFields(kind, parse(body))).toBe(`${field}: required for ${kind}`);
    }
  });

  it('names every field the SKU does not take, the unknown ones too', () => {
    expect(checkClipFields('clip-news', parse({ ...VALID['clip-news'], preprocess: 'roughCut', audio_url: 'https://e.com/a.mp3', foo: 1 }))).toMatch(
      /^audio_url, preprocess, foo: not a field of clip-news \(it takes style_id, title, duration, bgm, cover_url, introduce_card, language, materials, material_composition\)$/,
    );
    expect(checkClipFields('clip-realman', parse({ ...VALID['clip-realman'], material_composition: 'order' }))).toMatch(/^material_composition: not a field/);
    expect(checkClipFields('clip-mixcut', parse({ ...VALID['clip-mixcut'], preprocess: 'sliceMerge' }))).toMatch(/^preprocess: not a field/);
  });

  it('takes materials as optional on realman, and needs at least one where required', () => {
    expect(checkClipFields('clip-realman', parse({ ...VALID['clip-realman'], materials: [] }))).toBeNull();
    expect(checkClipFields('clip-news', parse({ ...VALID['clip-news'], materials: [] }))).toMatch(/^materials: clip-news needs at least one/);
    expect(ClipBody.safeParse({ ...VALID['clip-news'], materials: Array.from({ length: 11 }, () => img) }).success).toBe(false);
    expect(ClipBody.safeParse({ ...VALID['clip-news'], materials: Array.from({ length: 10 }, () => img) }).success).toBe(true);
  });

  it('needs bgm.url with mode custom, and only then', () => {
    const rm = VALID['clip-realman'];
    expect(checkClipFields('clip-realman', parse({ ...rm, bgm: { mode: 'custom' } }))).toBe('bgm.url: required when bgm.mode is custom');
    expect(checkClipFields('clip-realman', parse({ ...rm, bgm: { mode: 'none', url: 'https://e.com/m.mp3' } }))).toBe('bgm.url: only with bgm.mode custom (got mode none)');
    expect(checkClipFields('clip-realman', parse({ ...rm, bgm: { mode: 'custom', url: 'https://e.com/m.mp3', volume: 30 } }))).toBeNull();
    expect(checkClipFields('clip-realman', parse({ ...rm, bgm: { mode: 'auto' } }))).toBeNull();
  });

  it('wants public http(s) links for every URL', () => {
    const rm = VALID['clip-realman'];
    expect(checkClipFields('clip-realman', parse({ ...rm, cover_url: 'file:///etc/passwd' }))).toBe('cover_url: must be a public http(s) URL');
    expect(checkClipFields('clip-realman', parse({ ...rm, materials: [img, { type: 'video', file_url: 'ftp://e.com/v.mp4' }] }))).toBe('materials[1].file_url: must be a public http(s) URL');
    expect(checkClipFields('clip-realman', parse({ ...rm, source_video_url: 'https://' }))).toBe('source_video_url: must be a public http(s) URL');
  });
});

describe('the reservation', () => {
  it('is 300 s, or a longer explicit duration; clip-news clamps first', () => {
    expect(reservedSeconds('clip-realman', parse(VALID['clip-realman']))).toBe(300);
    expect(reservedSeconds('clip-realman', parse({ ...VALID['clip-realman'], duration: 120 }))).toBe(300);
    expect(reservedSeconds('clip-mixcut', parse({ ...VALID['clip-mixcut'], duration: 450.2 }))).toBe(451);
    expect(reservedSeconds('clip-news', parse({ ...VALID['clip-news'], duration: 1000 }))).toBe(300);
  });

  it('clamps news durations to 5-300 s', () => {
    expect([0.5, 5, 42, 300, 301, undefined].map(newsDuration)).toEqual([5, 5, 42, 300, 300, undefined]);
  });
});

describe('upstreamFields', () => {
  it('sends duration only for clip-news (clamped) with its default composition', () => {
    expect(upstreamFields('clip-news', parse({ ...VALID['clip-news'], duration: 2 }), ALL_LAYERS)).toEqual({ style_id: 's', materials: [img], title: 'T', duration: 5, material_composition: 'random' });
    expect(upstreamFields('clip-realman', parse({ ...VALID['clip-realman'], duration: 400 }), ALL_LAYERS)).toEqual({ style_id: 's', source_video_url: 'https://e.com/v.mp4' });
  });

  it("ignores the title and the introduce card a template has no layer for", () => {
    const body = parse({ ...VALID['clip-realman'], title: 'T', introduce_card: { name: 'N', description: 'D' } });
    expect(upstreamFields('clip-realman', body, { hasTitle: false, hasPersona: true })).not.toHaveProperty('title');
    expect(upstreamFields('clip-realman', body, { hasTitle: true, hasPersona: false })).not.toHaveProperty('introduce_card');
    expect(upstreamFields('clip-realman', body, ALL_LAYERS)).toMatchObject({ title: 'T', introduce_card: { name: 'N', description: 'D' } });
  });

  it('lists every URL by where it sits and the limit it answers to', () => {
    const body = parse({ ...VALID['clip-mixcut'], bgm: { mode: 'custom', url: 'https://e.com/m.mp3' }, cover_url: 'https://e.com/c.jpg' });
    expect(urlsOf(body).map((u) => [u.field, u.limit])).toEqual([['audio_url', 'spokenAudio'], ['materials[0].file_url', 'materialImage'], ['bgm.url', 'bgm'], ['cover_url', 'cover']]);
  });
});
