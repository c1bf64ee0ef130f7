import { describe, expect, it } from 'vitest';
import { ModelRegistry } from '../config/registry';
import { ConfigSchema } from '../config/schema';
import { ClipTemplates, isClipModel } from './templates';

const channel = (id: string, priority: number, models: string[], protocol = 'videos') => ({ id, protocol, base_url: `http://upstream.invalid/${id}`, api_key: 'k', priority, models });
const registry = new ModelRegistry(
  ConfigSchema.parse({
    models: [
      { id: 'clip-a', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-realman' } },
      { id: 'clip-b', kind: 'video', price: { per_second: '0.01' }, video: { kind: 'clip-news' } },
      { id: 'clip-off', kind: 'video', callable: false, price: { per_second: '0.01' }, video: { kind: 'clip-news' } },
      { id: 'plain', kind: 'video', price: { per_second: '0.01' } },
    ],
    channels: [
      channel('late', 2, ['clip-a']),
      channel('plain-only', 0, ['plain']),
      channel('first-b', 0, ['clip-b']),
      channel('second-a', 0, ['clip-a', 'plain']),
      channel('middle', 1, ['clip-b']),
      channel('last', 3, ['clip-a']),
    ],
  }),
);
const templates = new ClipTemplates(registry);

describe('ClipTemplates', () => {
  it('knows the clip models: callable video models of a clip kind', () => {
    expect(registry.models.filter(isClipModel).map((m) => m.id)).toEqual(['clip-a', 'clip-b']);
  });

  it('finds the clip models a key may call', () => {
    expect(templates.allowedClipModels(null).map((m) => m.id)).toEqual(['clip-a', 'clip-b']);
    expect(templates.allowedClipModels(['plain', 'clip-b']).map((m) => m.id)).toEqual(['clip-b']);
    expect(templates.allowedClipModels(['plain', 'clip-off'])).toEqual([]);
  });

  it('asks their channels lowest priority first, then in the config order, at most three', () => {
    expect(templates.channelsFor(templates.allowedClipModels(null)).map((c) => c.id)).toEqual(['first-b', 'second-a', 'middle']);
    expect(templates.channelsFor([registry.resolve('clip-a')!]).map((c) => c.id)).toEqual(['second-a', 'late', 'last']);
    expect(templates.channelsFor([])).toEqual([]);
  });
});
