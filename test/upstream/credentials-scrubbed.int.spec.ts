import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/schema';
import { api, logRows, mediaModel, startTaskHarness } from '../media/task-support';
import { textModel } from '../support/channels';
import type { SimulatedGateway } from '../support/gateway';

// Issue 31, item 5: an upstream whose errors echo the request (its headers, its URL with the query) must
// not hand the channel's credentials to the client, the call log, the channel's last error or the logs.

const API_KEY = 'sk-UPSTREAM-SECRET-7c1e0a9d4b2f48e6a3d5c7b9e1f20a4c';
const HEADER_SECRET = 'tenant-secret-9b8a7c6d5e4f';
const QUERY_SECRET = 'query-secret-1a2b3c4d5e6f';
const SECRETS = [API_KEY, HEADER_SECRET, QUERY_SECRET, API_KEY.slice(3)];

const readBody = async (request: IncomingMessage) => {
  let text = '';
  for await (const chunk of request) text += String(chunk);
  return text;
};

/** What a careless upstream says: the request as it saw it. */
const echo = (request: IncomingMessage) => `bad request; headers: ${JSON.stringify(request.headers)} url: ${request.url}`;

const upstream: Server = createServer(async (request, response) => {
  const text = await readBody(request);
  const body = (text ? JSON.parse(text) : {}) as { stream?: boolean; content?: Array<{ text?: string }> };
  const path = new URL(request.url!, 'http://upstream.local').pathname;
  const json = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  const sse = (frames: string) => response.writeHead(200, { 'content-type': 'text/event-stream' }).end(frames);
  const message = echo(request);
  if (path.endsWith('/chat/completions'))
    return body.stream
      ? sse(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] })}\n\ndata: ${JSON.stringify({ error: { message, type: 'server_error' } })}\n\n`)
      : json(400, { error: { message, type: 'invalid_request_error', code: null } });
  if (path.endsWith('/messages'))
    return body.stream
      ? sse(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message } })}\n\n`)
      : json(400, { type: 'error', error: { type: 'invalid_request_error', message } });
  if (path.endsWith('/responses'))
    return body.stream
      ? sse(`event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', response: { id: 'r', status: 'failed', error: { code: 'server_error', message } } })}\n\n`)
      : json(400, { error: { message, type: 'invalid_request_error' } });
  if (path.includes(':streamGenerateContent'))
    return response.writeHead(200, { 'content-type': 'text/event-stream' }).end(JSON.stringify({ error: { code: 500, message, status: 'INTERNAL' } }));
  if (path.includes(':generateContent')) return json(400, { error: { code: 400, message, status: 'INVALID_ARGUMENT' } });
  if (path.endsWith('/images/generations') || path.endsWith('/audio/speech')) return json(400, { error: { message, type: 'invalid_request_error' } });
  if (path.endsWith('/contents/generations/tasks') && request.method === 'POST')
    return body.content?.[0]?.text?.includes('later') ? json(200, { id: 'task-1' }) : json(400, { error: { code: 'InvalidParameter', message } });
  if (path.includes('/contents/generations/tasks/'))
    return json(200, { id: 'task-1', model: 'vid-upstream', status: 'failed', created_at: 1, updated_at: 2, error: { code: 'InternalError', message } });
  if (path.includes('/clip-templates')) return json(400, { error: { code: 'InvalidParameter', message } });
  return json(404, { error: { message: 'no such path' } });
});

const shaped = { api_key: API_KEY, headers: { 'X-Tenant-Token': HEADER_SECRET }, query: { sig: QUERY_SECRET }, group: 'default', priority: 0, weight: 1, tools: [] as string[] };
const clipVideo = { kind: 'clip-realman', resolution_required: false, video_mode: false, token_billing: false };

let h: SimulatedGateway;
let key: string;
let accountId: string;
let base: string;
beforeAll(async () => {
  const port = await new Promise<number>((resolve) => upstream.listen(0, '127.0.0.1', () => resolve((upstream.address() as AddressInfo).port)));
  base = `http://127.0.0.1:${port}`;
  const channel = (id: string, protocol: string, models: string[]) => ({ id, protocol, base_url: base, models: Object.fromEntries(models.map((m) => [m, `${m}-upstream`])), ...shaped });
  h = await startTaskHarness(
    () =>
      ({
        models: [
          textModel('m'),
          mediaModel({ id: 'img', kind: 'image', endpoint_type: 'images_generations', price: { per_image: '0.04' } }),
          mediaModel({ id: 'tts', kind: 'speech', price: { per_1k_characters: '0.015' } }),
          mediaModel({ id: 'vid', kind: 'video', price: { per_second: '0.10' } }),
          mediaModel({ id: 'clip-rm', kind: 'video', price: { per_second: '0.01' }, video: clipVideo } as never),
        ],
        channels: [
          channel('chat', 'chat-completions', ['m']),
          channel('msg', 'messages', ['m']),
          channel('resp', 'responses', ['m']),
          channel('gem', 'generate-content', ['m']),
          channel('img', 'images', ['img']),
          channel('tts', 'speech', ['tts']),
          channel('vid', 'videos', ['vid', 'clip-rm']),
        ].map((c, i) => ({ ...c, translation: false, priority: i })),
        channel_health: { failures_before_cooldown: 100, cooldown_s: 1, max_cooldown_s: 1, probe_interval_s: 0 },
      }) as GatewayConfig,
    { chatTimeoutMs: 5000 },
  );
  ({ key, accountId } = await h.t.accountWithKey());
});
afterAll(async () => {
  await h.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

const leaks = (text: string) => SECRETS.filter((s) => text.includes(s));

describe('upstream error text without the channel credentials', () => {
  it('chat-completions: the openai SDK gets the upstream 400 with its message, less the secrets; the call log too', async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1`, maxRetries: 0 });
    const error = (await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.message).toMatch(/bad request; headers:/);
    expect(error.message).toMatch(/"authorization":"Bearer \[REDACTED\]"/);
    expect(leaks(JSON.stringify(error.error))).toEqual([]);
    const rows = await logRows(h, accountId);
    const row = rows.find((r) => r.status === 'error')!;
    expect(row.error_message).toMatch(/bad request; headers:/);
    expect(leaks(JSON.stringify(rows))).toEqual([]);
  });

  it.each([
    ['chat-completions', '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }],
    ['messages', '/v1/messages', { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }],
    ['responses', '/v1/responses', { model: 'm', input: 'hi' }],
  ])('%s: the answer and its streamed error frame carry no secret', async (_protocol, path, body) => {
    const plain = await api(h).post(path, key, body);
    expect(plain.status).toBe(400);
    const plainText = await plain.text();
    expect(plainText).toMatch(/bad request; headers:/);
    expect(leaks(plainText)).toEqual([]);
    const streamed = await api(h).post(path, key, { ...body, stream: true });
    const streamedText = await streamed.text();
    expect(streamedText).toMatch(/bad request; headers:/);
    expect(leaks(streamedText)).toEqual([]);
  });

  it('generate-content: the answer and the stream\'s bare error object carry no secret', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
    const plain = await api(h).post('/v1beta/models/m:generateContent', key, body);
    const plainText = await plain.text();
    expect(plain.status).toBe(400);
    expect(plainText).toMatch(/bad request; headers:/);
    expect(leaks(plainText)).toEqual([]);
    const streamedText = await (await api(h).post('/v1beta/models/m:streamGenerateContent?alt=sse', key, body)).text();
    expect(streamedText).toMatch(/bad request; headers:/);
    expect(leaks(streamedText)).toEqual([]);
  });

  it('images and speech: the passed-through 400 carries no secret', async () => {
    const image = await api(h).post('/v1/images/generations', key, { model: 'img', prompt: 'a lighthouse' });
    const speech = await api(h).post('/v1/audio/speech', key, { model: 'tts', input: 'hello', voice: 'alloy' });
    for (const answer of [image, speech]) {
      const text = await answer.text();
      expect(answer.status).toBe(400);
      expect(text).toMatch(/bad request; headers:/);
      expect(leaks(text)).toEqual([]);
    }
  });

  it("media tasks: a refused submission and a failed task's error.message carry no secret; nor do the call log and the channel's last error", async () => {
    const refused = await api(h).post('/v1/videos/generations', key, { model: 'vid', content: [{ type: 'text', text: 'waves' }] });
    const refusedText = await refused.text();
    expect(refused.status).toBe(400);
    expect(refusedText).toMatch(/bad request; headers:/);
    expect(leaks(refusedText)).toEqual([]);
    const submitted = (await (await api(h).post('/v1/videos/generations', key, { model: 'vid', content: [{ type: 'text', text: 'waves later' }] })).json()) as { id: string };
    const failed = await api(h).until(`/v1/videos/generations/${submitted.id}`, key, (b) => b.status === 'failed');
    expect(JSON.stringify(failed)).toMatch(/bad request; headers:/);
    expect(leaks(JSON.stringify(failed))).toEqual([]);
    const templates = await api(h).get('/v1/videos/clip-templates?scene=realMan', key);
    const templatesText = await templates.text();
    expect(templates.status).toBe(400);
    expect(leaks(templatesText)).toEqual([]);
    expect(leaks(JSON.stringify(await logRows(h, accountId)))).toEqual([]);
    for (const id of ['chat', 'msg', 'resp', 'gem', 'img', 'tts', 'vid']) expect(leaks(String(h.t.gateway.channels.state(id).lastError))).toEqual([]);
  });
});
