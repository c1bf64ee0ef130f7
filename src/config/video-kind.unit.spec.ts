import { describe, expect, it } from 'vitest';
import { parseConfig } from './load';
import { videoKindOf } from './video-kind';

// DESIGN.md, "Config names": a model whose id is one of the spec's dh-* or clip-* SKU ids needs nothing
// more than `kind: video`; its rules follow from its id.

const model = (id: string, extra = '') => `  - id: ${id}\n    kind: video\n    price: {per_second: "0.10"}\n${extra}`;

describe('the kind of a video SKU', () => {
  it("follows from the spec's dh-* and clip-* ids when the config names none, as DESIGN.md writes them", () => {
    const ids = ['dh-avatar', 'dh-lipsync', 'dh-lipsync-pro', 'dh-lipsync-max', 'dh-motion', 'clip-realman', 'clip-mixcut', 'clip-news'];
    const config = parseConfig(`models:\n${ids.map((id) => model(id)).join('')}`, {});
    expect(config.models.map(videoKindOf)).toEqual(['dh-avatar', 'dh-lipsync', 'dh-lipsync', 'dh-lipsync', 'dh-motion', 'clip-realman', 'clip-mixcut', 'clip-news']);
  });

  it('is the explicit video.kind for other ids, standard without one; a spec-named id may repeat its own', () => {
    const config = parseConfig(
      `models:\n${model('my-lipsync', '    video: {kind: dh-lipsync}\n')}${model('vid-pro')}${model('dh-lipsync-pro', '    video: {kind: dh-lipsync}\n')}${model('dh-custom')}`,
      {},
    );
    expect(config.models.map(videoKindOf)).toEqual(['dh-lipsync', 'standard', 'dh-lipsync', 'standard']);
  });

  it('refuses at load a spec-named id whose explicit kind contradicts it', () => {
    expect(() => parseConfig(`models:\n${model('dh-avatar', '    video: {kind: standard}\n')}`, {})).toThrow(/models\.0\.video\.kind: dh-avatar is the spec's dh-avatar SKU/);
    expect(() => parseConfig(`models:\n${model('clip-news', '    video: {kind: clip-realman}\n')}`, {})).toThrow(/clip-news is the spec's clip-news SKU: video\.kind may be left out, or be clip-news \(got clip-realman\)/);
    expect(() => parseConfig('models:\n  - id: dh-motion\n    kind: image\n', {})).toThrow(/models\.0\.kind: dh-motion is the spec's dh-motion SKU: its kind is video/);
  });
});
