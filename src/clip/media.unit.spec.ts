import { describe, expect, it } from 'vitest';
import type { MediaFacts, MediaProbeResult, UrlProbe } from '../media-check/port';
import { ClipBody } from './fields';
import { probeMediaUrls } from '../media-check/checks';
import { judgeMedia, mediaChecks } from './media';

const facts = (url: string, more: Partial<MediaFacts>): MediaProbeResult => ({
  kind: 'probed',
  facts: { url, contentType: null, bytes: null, format: null, width: null, height: null, durationS: null, ...more },
});
const body = ClipBody.parse({
  model: 'm',
  style_id: 's',
  source_video_url: 'https://e.com/src.mp4',
  materials: [
    { type: 'image', file_url: 'https://e.com/1.jpg' },
    { type: 'video', file_url: 'https://e.com/2.mp4' },
  ],
  bgm: { mode: 'custom', url: 'https://e.com/m.mp3' },
  cover_url: 'https://e.com/c.jpg',
});

describe('mediaChecks and judgeMedia', () => {
  const checks = mediaChecks(body);

  it('gives each URL its limit', () => {
    expect(checks.map((c) => [c.field, c.rule.what])).toEqual([
      ['source_video_url', 'source video'],
      ['materials[0].file_url', 'material image'],
      ['materials[1].file_url', 'material video'],
      ['bgm.url', 'background music'],
      ['cover_url', 'cover'],
    ]);
  });

  it('passes what could not be probed, and refuses a refused URL naming its field', () => {
    expect(judgeMedia(checks, new Map())).toBeNull();
    expect(judgeMedia(checks, new Map([['https://e.com/2.mp4', { kind: 'unprobed', reason: 'x' } as MediaProbeResult]]))).toBeNull();
    expect(judgeMedia(checks, new Map([['https://e.com/c.jpg', { kind: 'refused', message: 'private' } as MediaProbeResult]]))).toBe('cover_url: private');
  });

  it('names the first limit broken', () => {
    const probes = new Map([['https://e.com/2.mp4', facts('https://e.com/2.mp4', { format: 'mp4', durationS: 60.5 })]]);
    expect(judgeMedia(checks, probes)).toBe('materials[1].file_url: material video: must be at most 60 s; https://e.com/2.mp4 is 60.5 s');
  });

  it('adds 2 s per image and each video its probed length to the materials total', () => {
    const many = ClipBody.parse({
      model: 'm',
      style_id: 's',
      materials: [...Array.from({ length: 5 }, (_, i) => ({ type: 'video', file_url: `https://e.com/${i}.mp4` })), ...Array.from({ length: 3 }, (_, i) => ({ type: 'image', file_url: `https://e.com/${i}.png` }))],
    });
    const at = (seconds: number) => new Map(Array.from({ length: 5 }, (_, i) => [`https://e.com/${i}.mp4`, facts(`https://e.com/${i}.mp4`, { format: 'mp4', durationS: seconds })] as const));
    expect(judgeMedia(mediaChecks(many), at(58.8))).toBeNull(); // 294 + 6
    expect(judgeMedia(mediaChecks(many), at(59))).toBe('materials: together at most 300 s (each image counts 2 s, each video its length); these come to 301 s');
  });
});

describe('probeMediaUrls', () => {
  it('probes each distinct URL once, all at the same time, and gives up on the slow ones at the budget', async () => {
    const asked: string[] = [];
    let running = 0;
    let most = 0;
    const probe: UrlProbe = {
      async probe(url) {
        asked.push(url);
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, url.includes('slow') ? 10_000 : 20));
        running--;
        return { kind: 'unprobed', reason: 'done' };
      },
    };
    const started = Date.now();
    const results = await probeMediaUrls(probe, ['https://a', 'https://b', 'https://a', 'https://slow'], 200);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(asked).toEqual(['https://a', 'https://b', 'https://slow']);
    expect(most).toBe(3);
    expect(results.get('https://a')).toEqual({ kind: 'unprobed', reason: 'done' });
    expect(results.get('https://slow')).toEqual({ kind: 'unprobed', reason: 'not probed within 200 ms' });
  });

  it('takes a probe that throws as unprobed', async () => {
    const results = await probeMediaUrls({ probe: async () => Promise.reject(new Error('boom')) }, ['https://x'], 100);
    expect(results.get('https://x')).toMatchObject({ kind: 'unprobed' });
  });
});
