import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { imageTokens, promptTokens, startSimulator, videoTokens, type Simulator } from '../../src/simulator';
import { KEY, openai, post, TASKS } from './support';

let sim: Simulator;
let client: OpenAI;
beforeAll(async () => {
  sim = await startSimulator();
  client = openai(sim);
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

describe('images (openai SDK)', () => {
  it('returns n url images with usage; the urls are served', async () => {
    const res = await client.images.generate({ model: 'gpt-image-1', prompt: 'a cat', n: 2, size: '1024x1536' });
    expect(res.data).toHaveLength(2);
    expect(res.data![0]!.url).toMatch(new RegExp(`^${sim.url}/files/.+\\.png$`));
    const p = promptTokens('images', { prompt: 'a cat' });
    expect(res.usage).toMatchObject({ input_tokens: p, output_tokens: 2 * imageTokens('1024x1536'), total_tokens: p + 2 * 1536 });
    const img = await fetch(res.data![0]!.url!);
    expect(img.headers.get('content-type')).toBe('image/png');
  });

  it('returns 4 images for grid4 models regardless of n, and b64_json on request', async () => {
    const res = await client.images.generate({ model: 'mj-grid4-v7', prompt: 'x', n: 1, response_format: 'b64_json' });
    expect(res.data).toHaveLength(4);
    expect(res.data![0]!.b64_json).toMatch(/^iVBOR/);
    const err = await client.images.generate({ model: 'gpt-image-1', prompt: 'x', n: 11 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('accepts a multipart edit and records its fields and files; a missing image is a 400', async () => {
    const image = await toFile(Buffer.from('not really a png'), 'in.png', { type: 'image/png' });
    const res = await client.images.edit({ model: 'gpt-image-1', prompt: 'add a hat', image, n: 1 });
    expect(res.data).toHaveLength(1);
    const rec = sim.requests[0]!;
    expect(rec.path).toBe('/v1/images/edits');
    expect(rec.body).toMatchObject({ model: 'gpt-image-1', prompt: 'add a hat', n: '1', files: [{ field: 'image', filename: 'in.png', contentType: 'image/png', size: 16 }] });
    const missing = await post(`${sim.url}/v1/images/edits`, { model: 'gpt-image-1', prompt: 'x' });
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.text)).toMatchObject({ error: { type: 'invalid_request_error', param: 'image' } });
  });
});

describe('images_partial', () => {
  it('returns only k of the asked images, usage counting the delivered ones', async () => {
    const res = await client.images.generate({ model: 'gpt-image-1', prompt: 'x [[sim:images_partial:3]]', n: 4 });
    expect(res.data).toHaveLength(3);
    expect(res.usage).toMatchObject({ output_tokens: 3 * imageTokens('1024x1024') });
    expect((res.usage as unknown as { generated_images: number }).generated_images).toBe(3);
    sim.enqueueFor({ protocol: 'images' }, 'images_partial:3');
    expect((await client.images.generate({ model: 'mj-grid4', prompt: 'x' })).data).toHaveLength(3);
    expect((await client.images.generate({ model: 'gpt-image-1', prompt: 'x [[sim:images_partial:5]]', n: 2 })).data).toHaveLength(2);
  });
});

describe('/files/', () => {
  it('serves small real files by extension and 404s the rest', async () => {
    const types: Record<string, string> = {
      'a.png': 'image/png',
      'a.mp4': 'video/mp4',
      'a.mp3': 'audio/mpeg',
      'a.wav': 'audio/wav',
      'a.flac': 'audio/flac',
      'a.en.srt': 'application/x-subrip',
      'a.vtt': 'text/vtt',
      'a.json': 'application/json',
    };
    for (const [name, type] of Object.entries(types)) {
      const res = await fetch(`${sim.url}/files/${name}`);
      expect([name, res.status, res.headers.get('content-type')]).toEqual([name, 200, type]);
      expect(Number(res.headers.get('content-length'))).toBe((await res.arrayBuffer()).byteLength);
    }
    expect(await (await fetch(`${sim.url}/files/a.vtt`)).text()).toMatch(/^WEBVTT\n\n00:00:00\.000 --> /);
    expect(await (await fetch(`${sim.url}/files/a.json`)).json()).toMatchObject({ segments: [{ start: 0, text: expect.any(String) }] });
    expect((await fetch(`${sim.url}/files/a.exe`)).status).toBe(404);
  });
});

describe('video tasks', () => {
  const tasks = `/api/v3/contents/generations/tasks`;
  const get = async (id: string): Promise<Record<string, unknown>> => {
    const r = await fetch(`${sim.url}${tasks}/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(r.status).toBe(200);
    return (await r.json()) as Record<string, unknown>;
  };

  it('goes queued → running → succeeded on the third GET, with content, duration and usage', async () => {
    const submit = await post(`${sim.url}${tasks}`, {
      model: 'seedance-1-0-pro-250528',
      content: [{ type: 'text', text: 'a dog running --duration 8' }],
      resolution: '1080p',
      return_last_frame: true,
    });
    expect(submit.status).toBe(200);
    const { id } = JSON.parse(submit.text) as { id: string };
    const first = await get(id);
    expect(first).toMatchObject({ id, model: 'seedance-1-0-pro-250528', status: 'queued', resolution: '1080p' });
    expect(first.content).toBeUndefined();
    expect((await get(id)).status).toBe('running');
    const done = await get(id);
    const tokens = videoTokens('1080p', 8);
    expect(tokens).toBe(Math.ceil((1920 * 1080 * 24 * 8) / 1024));
    expect(done).toMatchObject({
      status: 'succeeded',
      duration: 8,
      framespersecond: 24,
      usage: { completion_tokens: tokens, total_tokens: tokens },
      content: { video_url: `${sim.url}/files/${id}.mp4`, last_frame_url: `${sim.url}/files/${id}-last.png` },
    });
    expect(done.updated_at as number).toBeGreaterThanOrEqual(done.created_at as number);
  });

  it('fails with an error object for [[sim:task_failed]], honours task_polls, and 404s unknown ids', async () => {
    const submit = await post(`${sim.url}${tasks}`, { model: 'v', content: [{ type: 'text', text: 'x [[sim:task_failed,task_polls:1]]' }] });
    const { id } = JSON.parse(submit.text) as { id: string };
    const failed = await get(id);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    const missing = await fetch(`${sim.url}${tasks}/nope`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'ResourceNotFound' } });
  });
});

describe('what the gateway probes a media channel with', () => {
  it('GET /v1/models answers an authenticated caller (any prefix), refuses a revoked key with 401 until restored', async () => {
    const models = (key: string) => fetch(`${sim.url}/prefix/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect((await models(KEY)).status).toBe(200);
    expect(await (await models(KEY)).json()).toMatchObject({ object: 'list', data: [] });
    expect((await models('some-invalid-key')).status).toBe(401);
    sim.revokeKey('kept-key');
    expect((await models('kept-key')).status).toBe(401);
    expect((await fetch(`${sim.url}/prefix${TASKS}/cgt-unknown`, { headers: { authorization: 'Bearer kept-key' } })).status).toBe(401);
    sim.revokeKey('kept-key', false);
    expect((await models('kept-key')).status).toBe(200);
    expect((await fetch(`${sim.url}/prefix${TASKS}/cgt-unknown`, { headers: { authorization: 'Bearer kept-key' } })).status).toBe(404);
  });
});
