import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, videoTokens, type Simulator } from '../../src/simulator';
import { finalTask, KEY, pollTask, pollUntilDone, post, submitTask, TASKS } from './support';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const video = (text: string, extra: Record<string, unknown> = {}) => ({ model: 'seedance', content: [{ type: 'text', text }], ...extra });
const music = (prompt: string) => ({ model: 'suno-v4', prompt });
const transcript = (url: string) => ({ model: 'transcribe-1', url });

describe('task end states', () => {
  it('task_expired ends `expired` with an error and no content', async () => {
    const views = await pollUntilDone(sim, await submitTask(sim, music('x [[sim:task_expired]]')));
    expect(views.map((v) => v.status)).toEqual(['queued', 'running', 'expired']);
    expect(views.at(-1)).toMatchObject({ error: { code: 'TaskExpired', message: expect.any(String) } });
    expect(views.at(-1)!.content).toBeUndefined();
  });

  it('task_cancelled ends `cancelled` with an error, as if the upstream cancelled it', async () => {
    const done = await finalTask(sim, await submitTask(sim, transcript('https://a.example/b.mp3[[sim:task_cancelled,task_polls:2]]')));
    expect(done).toMatchObject({ status: 'cancelled', error: { code: 'Cancelled' } });
    expect(done.content).toBeUndefined();
  });

  it('task_failed works for every family, with a family-worded message', async () => {
    const body = { model: 'avatar-1', source_url: 'https://a.example/me.mp4', meta: { note: '[[sim:task_failed]]' } };
    const done = await finalTask(sim, await submitTask(sim, body));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'InternalServiceError', message: 'The avatar creation failed (simulated).' } });
  });
});

describe('task_progress', () => {
  it('reports a rising progress on each poll, 100 once succeeded', async () => {
    const views = await pollUntilDone(sim, await submitTask(sim, video('x [[sim:task_progress,task_polls:4]]')));
    expect(views.map((v) => [v.status, v.progress])).toEqual([
      ['queued', 0],
      ['running', 33],
      ['running', 66],
      ['succeeded', 100],
    ]);
    const ended = await pollUntilDone(sim, await submitTask(sim, music('x [[sim:task_progress,task_failed]]')));
    expect(ended.map((v) => v.progress)).toEqual([0, 50, undefined]);
  });

  it('without it no view has a progress field', async () => {
    const views = await pollUntilDone(sim, await submitTask(sim, video('x')));
    expect(views.some((v) => 'progress' in v)).toBe(false);
  });
});

describe('task_duration_ms', () => {
  it('video: a fractional duration, and usage tokens computed from it', async () => {
    const done = await finalTask(sim, await submitTask(sim, video('x --duration 8 [[sim:task_duration_ms:2500]]', { resolution: '480p' })));
    const tokens = videoTokens('480p', 2.5);
    expect(tokens).toBe(Math.ceil((864 * 480 * 24 * 2.5) / 1024));
    expect(done).toMatchObject({ duration: 2.5, usage: { completion_tokens: tokens, total_tokens: tokens } });
  });

  it('music: the task duration, shared equally by the two songs', async () => {
    sim.enqueueFor({ protocol: 'music' }, 'task_duration_ms:90500');
    const done = await finalTask(sim, await submitTask(sim, music('x')));
    expect(done.duration).toBe(90.5);
    expect((done.content as { songs: Array<{ duration: number }> }).songs.map((s) => s.duration)).toEqual([45.25, 45.25]);
  });

  it('is validated like the other numeric scenarios', () => {
    expect(() => sim.enqueue('task_duration_ms:0')).toThrow(/>= 1/);
    expect(() => sim.enqueue('task_duration_ms' as never)).toThrow(/unknown simulator scenario/);
  });
});

describe('markers anywhere in a task body', () => {
  it('reads every string value, however deep', async () => {
    const body = { model: 'suno-v4', prompt: 'calm', tags: { mood: ['soft', 'x [[sim:task_polls:1]]'] } };
    const id = await submitTask(sim, body);
    expect(sim.requests[0]!.scenarios).toEqual(['task_polls:1']);
    expect((await pollTask(sim, id)).body.status).toBe('succeeded');
  });

  it('an unknown marker in a transcript url is a 400 in the ModelArk shape', async () => {
    const res = await post(`${sim.url}${TASKS}`, transcript('https://a.example/x.mp3?[[sim:bogus]]'));
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'InvalidParameter', message: expect.stringContaining('unknown simulator scenario') } });
  });
});

describe('request scenarios on submits and polls', () => {
  it('a queued entry is taken per request in arrival order, by the family filter, polls included', async () => {
    sim.enqueueFor({ protocol: 'transcripts' }, 'ok', 'http_503');
    const videoId = await submitTask(sim, video('x'));
    expect((await pollTask(sim, videoId)).status).toBe(200); // a videos poll leaves the transcripts entries alone
    const id = await submitTask(sim, transcript('https://a.example/x.mp3')); // takes `ok`
    const failed = await pollTask(sim, id); // takes http_503
    expect(failed.status).toBe(503);
    expect(failed.body).toMatchObject({ error: { code: 'ServiceUnavailable', type: 'ServiceUnavailable' } });
    expect((await pollTask(sim, id)).body.status).toBe('queued'); // the failed poll did not advance the task
    expect(sim.requests.map((r) => r.scenarios)).toEqual([[], [], ['ok'], ['http_503'], []]);
  });

  it('http_429 on an avatar submit carries retry-after; a music submit marker status uses the same shape', async () => {
    sim.enqueueFor({ protocol: 'avatars' }, 'http_429');
    const avatar = await post(`${sim.url}${TASKS}`, { model: 'a', source_url: 'https://a.example/me.mp4' });
    expect(avatar.status).toBe(429);
    expect(avatar.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(avatar.text)).toMatchObject({ error: { code: 'RateLimitExceeded' } });
    const m = await post(`${sim.url}${TASKS}`, music('x [[sim:http_500]]'));
    expect(m.status).toBe(500);
    expect(JSON.parse(m.text)).toMatchObject({ error: { code: 'InternalServiceError' } });
  });

  it('no_usage at submit or on a poll removes the video usage', async () => {
    const atSubmit = await finalTask(sim, await submitTask(sim, video('x [[sim:no_usage]]')));
    expect(atSubmit.status).toBe('succeeded');
    expect(atSubmit.usage).toBeUndefined();
    const id = await submitTask(sim, video('x [[sim:task_polls:1]]'));
    sim.enqueueFor({ protocol: 'videos' }, 'no_usage');
    expect((await pollTask(sim, id)).body.usage).toBeUndefined();
    expect((await pollTask(sim, id)).body.usage).toBeDefined();
  });

  it('slow_first_byte delays a poll; reset_connection drops one; hang never answers a submit', async () => {
    const id = await submitTask(sim, music('x'));
    sim.enqueueFor({ protocol: 'music' }, 'slow_first_byte:60', 'reset_connection', 'hang');
    const t0 = Date.now();
    expect((await pollTask(sim, id)).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(55);
    const reset = await fetch(`${sim.url}${TASKS}/${id}`, { headers: { authorization: `Bearer ${KEY}` } }).catch((e: unknown) => e);
    expect(reset).toBeInstanceOf(Error);
    const hung = await fetch(`${sim.url}${TASKS}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(music('y')),
      signal: AbortSignal.timeout(80),
    }).catch((e: unknown) => e);
    expect(hung).toBeInstanceOf(Error);
    expect(sim.requests.map((r) => r.protocol)).toEqual(['music', 'music', 'music', 'music']);
  });
});
