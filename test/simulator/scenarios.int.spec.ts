import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError } from '@google/genai';
import OpenAI, { APIError } from 'openai';
import { GARBAGE_BODY, refusedUrl, startSimulator, type Simulator } from '../../src/simulator';
import { anthropic, genai, KEY, openai, post, sseData, sseEvents } from './support';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const chat = (content: string): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming => ({ model: 'm', messages: [{ role: 'user', content }] });

describe('queued scenarios and markers', () => {
  it('applies queued scenarios one per request in order (channel 1 fails, channel 2 succeeds)', async () => {
    sim.enqueue('http_500', 'http_429');
    const c = openai(sim);
    const e1 = await c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(OpenAI.InternalServerError);
    expect((e1 as APIError).error).toMatchObject({ type: 'server_error' });
    const e2 = await c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(OpenAI.RateLimitError);
    expect((e2 as APIError).headers?.get('retry-after')).toBe('1');
    const ok = await c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(ok.choices[0]!.message.content).toBe('Echo: x');
    expect(sim.requests.map((r) => r.scenarios)).toEqual([['http_500'], ['http_429'], []]);
  });

  it('selects by filter with enqueueFor (api key / path prefix of a channel)', async () => {
    sim.enqueueFor({ apiKey: 'key-a' }, 'http_503');
    sim.enqueueFor({ pathPrefix: '/chan-b' }, 'http_502');
    const b = await post(`${sim.url}/chan-b/v1/chat/completions`, chat('x'));
    expect(b.status).toBe(502);
    const other = await post(`${sim.url}/v1/chat/completions`, chat('x'));
    expect(other.status).toBe(200);
    const a = await post(`${sim.url}/v1/chat/completions`, chat('x'), { authorization: 'Bearer key-a' });
    expect(a.status).toBe(503);
    expect(() => sim.enqueue('nonsense' as never)).toThrow(/unknown simulator scenario/);
  });

  it('renders each vendor error shape for a marker status', async () => {
    const ant = await anthropic(sim)
      .messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'hi [[sim:http_503]]' }] })
      .catch((e: unknown) => e);
    expect(ant).toBeInstanceOf(Anthropic.APIError);
    expect((ant as InstanceType<typeof Anthropic.APIError>).status).toBe(503);
    expect((ant as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });

    const gem = await genai(sim)
      .models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi [[sim:http_429]]' })
      .catch((e: unknown) => e);
    expect(gem).toBeInstanceOf(ApiError);
    expect((gem as ApiError).status).toBe(429);
    expect(JSON.parse((gem as ApiError).message)).toEqual({
      error: { code: 429, message: expect.any(String), status: 'RESOURCE_EXHAUSTED' },
    });

    const resp = await openai(sim).responses.create({ model: 'm', input: 'x [[sim:http_401]]' }).catch((e: unknown) => e);
    expect(resp).toBeInstanceOf(OpenAI.AuthenticationError);

    const video = await post(`${sim.url}/api/v3/contents/generations/tasks`, { model: 'v', content: [{ type: 'text', text: 'x [[sim:http_422]]' }] });
    expect(video.status).toBe(422);
    expect(JSON.parse(video.text)).toMatchObject({ error: { code: expect.any(String), type: expect.any(String), message: expect.any(String) } });

    const unknown = await post(`${sim.url}/v1/chat/completions`, chat('x [[sim:bogus]]'));
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('unknown simulator scenario');
    const noKey = await post(`${sim.url}/v1/chat/completions`, chat('x'), {});
    expect(noKey.status).toBe(401);
  });
});

describe('connection-level scenarios', () => {
  it('reset_connection destroys the socket before any byte', async () => {
    const err = await openai(sim).chat.completions.create(chat('x [[sim:reset_connection]]')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('slow_first_byte delays the headers (an SDK time-out fires)', async () => {
    const t0 = Date.now();
    const ok = await post(`${sim.url}/v1/chat/completions`, chat('x [[sim:slow_first_byte:150]]'));
    expect(ok.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    const err = await openai(sim, { timeout: 50 })
      .chat.completions.create(chat('x [[sim:slow_first_byte:300]]'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
  });

  it('slow_stream spaces the frames', async () => {
    // 6 frames (role, "Echo: ", "a ", "b", finish, [DONE]) → 5 pauses of 40 ms
    const t0 = Date.now();
    const stream = await openai(sim).chat.completions.create({ ...chat('a b [[sim:slow_stream:40]]'), stream: true });
    let chunks = 0;
    for await (const _ of stream) chunks++;
    expect(chunks).toBe(5);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(5 * 40 - 5);
  });

  it('hang never answers; close() still ends promptly', async () => {
    const own = await startSimulator();
    own.enqueue('hang');
    const res = fetch(`${own.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(chat('x')),
      signal: AbortSignal.timeout(150),
    });
    await expect(res).rejects.toThrow(/aborted|timeout/i);
    const t0 = Date.now();
    const hanging = fetch(`${own.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(chat('x [[sim:hang]]')),
    }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    await own.close();
    expect(await hanging).toBeInstanceOf(Error);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });

  it('refusedUrl gives an address where the connection is refused', async () => {
    const url = await refusedUrl();
    const err = await fetch(`${url}/v1/chat/completions`).catch((e: unknown) => e);
    expect((err as Error & { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
  });
});

describe('broken streams', () => {
  it('cut_stream_after: the SDK stream errors and the raw stream has no terminator', async () => {
    const stream = await openai(sim).chat.completions.create({ ...chat('one two three four [[sim:cut_stream_after:3]]'), stream: true });
    const got: string[] = [];
    const err = await (async () => {
      for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(got.join('')).toBe('Echo: one ');

    const raw = await post(`${sim.url}/v1/chat/completions`, { ...chat('one two [[sim:cut_stream_after:2]]'), stream: true });
    expect(raw.error).toBeDefined();
    expect(sseData(raw.text)).toHaveLength(2);
    expect(raw.text).not.toContain('[DONE]');

    const ant = await post(
      `${sim.url}/v1/messages`,
      { model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'a b c [[sim:cut_stream_after:4]]' }] },
      { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    );
    expect(sseEvents(ant.text)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta']);
    const antSdk = await (async () => {
      const s = await anthropic(sim).messages.create({ model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'a b [[sim:cut_stream_after:4]]' }] });
      for await (const _ of s) void _;
    })().catch((e: unknown) => e);
    expect(antSdk).toBeInstanceOf(Error);

    const gem = await (async () => {
      const s = await genai(sim).models.generateContentStream({ model: 'g', contents: 'a b c [[sim:cut_stream_after:1]]' });
      for await (const _ of s) void _;
    })().catch((e: unknown) => e);
    expect(gem).toBeInstanceOf(Error);
  });

  it('cut_stream_after on a non-streaming answer sends half the body', async () => {
    const raw = await post(`${sim.url}/v1/chat/completions`, chat('x [[sim:cut_stream_after:0]]'));
    expect(raw.status).toBe(200);
    expect(raw.error).toBeDefined();
    expect(() => JSON.parse(raw.text)).toThrow();
  });

  it('garbage_body: a 200 whose whole body is not JSON; a task submit still creates its task', async () => {
    const raw = await post(`${sim.url}/v1/images/generations`, { model: 'img', prompt: 'x [[sim:garbage_body]]' });
    expect([raw.status, raw.error, raw.text]).toEqual([200, undefined, GARBAGE_BODY]);
    const submit = await post(`${sim.url}/api/v3/contents/generations/tasks`, { model: 'v', content: [{ type: 'text', text: 'x [[sim:garbage_body]]' }] });
    expect([submit.status, submit.text]).toEqual([200, GARBAGE_BODY]);
    const poll = await fetch(`${sim.url}/api/v3/contents/generations/tasks/cgt-sim000002`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(poll.status).toBe(200);
  });

  it('error_frame_after: each SDK surfaces the in-protocol error frame', async () => {
    const stream = await openai(sim).chat.completions.create({ ...chat('a b c [[sim:error_frame_after:2]]'), stream: true });
    const chatErr = await (async () => {
      for await (const _ of stream) void _;
    })().catch((e: unknown) => e);
    expect(chatErr).toBeInstanceOf(OpenAI.APIError);
    expect((chatErr as APIError).error).toMatchObject({ type: 'server_error' });
    const raw = await post(`${sim.url}/v1/chat/completions`, { ...chat('a b c [[sim:error_frame_after:2]]'), stream: true });
    expect(raw.error).toBeUndefined();
    expect(JSON.parse(sseData(raw.text).at(-1)!)).toMatchObject({ error: { type: 'server_error' } });

    const antErr = await (async () => {
      const s = await anthropic(sim).messages.create({ model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'a b [[sim:error_frame_after:3]]' }] });
      for await (const _ of s) void _;
    })().catch((e: unknown) => e);
    expect(antErr).toBeInstanceOf(Anthropic.APIError);
    expect((antErr as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });

    const gemErr = await (async () => {
      const s = await genai(sim).models.generateContentStream({ model: 'g', contents: 'a b c [[sim:error_frame_after:2]]' });
      for await (const _ of s) void _;
    })().catch((e: unknown) => e);
    expect(gemErr).toBeInstanceOf(ApiError);
    expect((gemErr as ApiError).status).toBe(503);

    const events: string[] = [];
    const s = await openai(sim).responses.create({ model: 'm', input: 'a [[sim:error_frame_after:4]]', stream: true });
    for await (const e of s) events.push(e.type);
    expect(events).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'error']);
  });

  it('no_usage removes the usage chunk and fields', async () => {
    const raw = await post(`${sim.url}/v1/chat/completions`, { ...chat('x [[sim:no_usage]]'), stream: true, stream_options: { include_usage: true } });
    expect(raw.text).not.toContain('usage');
    expect(sseData(raw.text).at(-1)).toBe('[DONE]');
    const msg = await anthropic(sim).messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x [[sim:no_usage]]' }] });
    expect(msg.usage).toBeUndefined();
    const gem = await genai(sim).models.generateContent({ model: 'g', contents: 'x [[sim:no_usage]]' });
    expect(gem.usageMetadata).toBeUndefined();
  });

  it('reply_tokens pads the reply to an exact length', async () => {
    const res = await openai(sim).chat.completions.create(chat('x [[sim:reply_tokens:50]]'));
    expect((res as OpenAI.Chat.ChatCompletion).usage!.completion_tokens).toBe(50);
    expect((res as OpenAI.Chat.ChatCompletion).choices[0]!.message.content!.startsWith('Echo: x lorem')).toBe(true);
  });
});
