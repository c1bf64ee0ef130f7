import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLIP_TEMPLATES, DEFAULT_CLIP_SECONDS, startSimulator, taskFamily, type Simulator } from '../../src/simulator';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const headers = { authorization: 'Bearer sim-key', 'content-type': 'application/json' };
const get = (path: string) => fetch(`${sim.url}${path}`, { headers });
const post = (path: string, body: unknown) => fetch(`${sim.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
const TASKS = '/api/v3/contents/generations/tasks';

describe('clip templates', () => {
  it('lists each scene, with both values of each flag somewhere, and serves a template with canvas and layers', async () => {
    for (const scene of Object.keys(CLIP_TEMPLATES)) {
      const body = (await (await get(`/prefix/api/v3/clip-templates?scene=${scene}`)).json()) as { templates: Array<Record<string, unknown>> };
      expect(body.templates.map((t) => t.id)).toEqual(CLIP_TEMPLATES[scene]!.map((t) => t.id));
      expect(body.templates[0]).toEqual({ id: expect.any(String), title: expect.any(String), cover_url: expect.stringMatching(/\/files\/.+\.png$/), has_title: expect.any(Boolean), has_persona: expect.any(Boolean) });
    }
    const all = Object.values(CLIP_TEMPLATES).flat();
    expect(new Set(all.map((t) => t.has_title))).toEqual(new Set([true, false]));
    expect(new Set(all.map((t) => t.has_persona))).toEqual(new Set([true, false]));
    const one = (await (await get('/api/v3/clip-templates/rm-vlog')).json()) as { layers: Array<{ id: string }>; canvas: unknown; scene: string };
    expect(one).toMatchObject({ id: 'rm-vlog', scene: 'realMan', has_title: true, has_persona: false, canvas: { width: 1080, height: 1920 } });
    expect(one.layers.map((l) => l.id)).toEqual(['background', 'footage', 'subtitles', 'title']);
    expect(sim.requests.every((r) => r.protocol === 'videos')).toBe(true);
  });

  it('refuses an unknown scene (400) and an unknown id (404), in the tasks API error shape', async () => {
    const bad = await get('/api/v3/clip-templates?scene=nope');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { message: expect.stringContaining('scene') } });
    expect((await get('/api/v3/clip-templates')).status).toBe(400);
    expect((await get('/api/v3/clip-templates/ghost')).status).toBe(404);
  });
});

describe('clip tasks', () => {
  it('is the family of a body with style_id, and delivers a video of the chosen length', async () => {
    expect(taskFamily({ style_id: 'x', content: [] })).toBe('clip');
    const ids: string[] = [];
    for (const body of [
      { model: 'clip', style_id: 'news-daily', title: 'Evening' },
      { model: 'clip', style_id: 'news-daily', title: 'Evening', duration: 42 },
      { model: 'clip', style_id: 'rm-talk', title: 'x [[sim:task_duration_ms:12345]]' },
    ]) {
      const answer = (await (await post(TASKS, body)).json()) as { id: string };
      ids.push(answer.id);
    }
    const durations: unknown[] = [];
    for (const id of ids) {
      let view: Record<string, unknown> = {};
      for (let i = 0; i < 3; i++) view = (await (await get(`${TASKS}/${id}`)).json()) as Record<string, unknown>;
      expect(view).toMatchObject({ status: 'succeeded', content: { video_url: expect.stringMatching(/\.mp4$/) }, framespersecond: 25 });
      durations.push(view.duration);
    }
    expect(durations).toEqual([DEFAULT_CLIP_SECONDS, 42, 12.345]);
  });

  it('refuses an unknown style_id with 400, and fails or expires on the task scenarios', async () => {
    expect((await post(TASKS, { model: 'clip', style_id: 'ghost' })).status).toBe(400);
    for (const [scenario, status] of [
      ['task_failed', 'failed'],
      ['task_expired', 'expired'],
    ]) {
      const { id } = (await (await post(TASKS, { model: 'clip', style_id: 'mix-promo', language: `en [[sim:${scenario}]]` })).json()) as { id: string };
      let view: Record<string, unknown> = {};
      for (let i = 0; i < 3; i++) view = (await (await get(`${TASKS}/${id}`)).json()) as Record<string, unknown>;
      expect(view).toMatchObject({ status, error: { code: expect.any(String) } });
    }
  });
});
