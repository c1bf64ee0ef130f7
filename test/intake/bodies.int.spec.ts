import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { chunk, jsonHead, sendPartial } from './support';

type Json = Record<string, any>;

let g: SimulatedGateway;
let key: string;

beforeAll(async () => {
  g = await startSimulatedGateway(chatConfig);
  key = (await g.t.accountWithKey()).key;
});
afterAll(() => g.close());

const MiB = 1024 * 1024;
/** What a client sends before the gateway answers: far less than the bodies it declares. */
const FIRST_PART = Buffer.alloc(256 * 1024, ' ');

function post(path: string, body: string, headers: Record<string, string> = { 'x-api-key': key }) {
  return fetch(`${g.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
}

/** `depth` arrays nested inside one another. */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('a body is refused before it is read', () => {
  it('a request without a valid key gets its 401 at once, and its 90 MB body is never read', async () => {
    const reply = await sendPartial(g.baseUrl, jsonHead('POST', '/v1/chat/completions', 90 * MiB), FIRST_PART);
    expect(reply.status).toBe(401);
    expect((JSON.parse(reply.body) as Json).error.code).toBe('invalid_api_key');
    // The gateway closed the connection instead of reading the other 89.75 MB.
    expect(reply.closed).toBe(true);
    expect(reply.headers.connection).toBe('close');
  });

  it('an unknown path answers 404 at once, whatever body it declares', async () => {
    const reply = await sendPartial(g.baseUrl, jsonHead('POST', '/no/such/route', 90 * MiB), FIRST_PART);
    expect(reply.status).toBe(404);
    expect((JSON.parse(reply.body) as Json).error.code).toBe('not_found');
    expect(reply.closed).toBe(true);
  });

  it('a length over the route limit gets 413 in the endpoint shape before the body is read', async () => {
    const headers = { 'x-api-key': key };
    const chat = await sendPartial(g.baseUrl, jsonHead('POST', '/v1/chat/completions', 9 * MiB, headers), FIRST_PART);
    expect(chat.status).toBe(413);
    expect(JSON.parse(chat.body)).toEqual({
      error: { message: "the request body is over this endpoint's limit of 8 MB", type: 'invalid_request_error', code: 'request_too_large' },
    });
    expect(chat.closed).toBe(true);

    const messages = await sendPartial(g.baseUrl, jsonHead('POST', '/v1/messages', 9 * MiB, headers), FIRST_PART);
    expect(messages.status).toBe(413);
    expect(JSON.parse(messages.body)).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });

    const generate = await sendPartial(g.baseUrl, jsonHead('POST', '/v1beta/models/gem-model:generateContent', 9 * MiB, headers), FIRST_PART);
    expect(generate.status).toBe(413);
    expect(JSON.parse(generate.body)).toMatchObject({ error: { code: 413, status: 'INVALID_ARGUMENT' } });
  });

  it('a chunked body is cut at the route limit: 413, and nothing more is read', async () => {
    const part = Buffer.concat(Array.from({ length: 9 }, () => chunk(Buffer.alloc(MiB, ' '))));
    const reply = await sendPartial(g.baseUrl, jsonHead('POST', '/v1/chat/completions', 'chunked', { 'x-api-key': key }), part);
    expect(reply.status).toBe(413);
    expect((JSON.parse(reply.body) as Json).error.code).toBe('request_too_large');
    expect(reply.closed).toBe(true);
  });

  it('a multipart upload sent without a length is cut once it passes 95 MB: 413, and nothing more is kept', async () => {
    const head = [
      'POST /v1/images/edits HTTP/1.1',
      'Host: gateway.test',
      `x-api-key: ${key}`,
      'Content-Type: multipart/form-data; boundary=b',
      'Transfer-Encoding: chunked',
    ].join('\r\n');
    const opening = chunk('--b\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n');
    const file = Buffer.concat(Array.from({ length: 96 }, () => chunk(Buffer.alloc(MiB, 7))));
    const reply = await sendPartial(g.baseUrl, `${head}\r\n\r\n`, Buffer.concat([opening, file]), { waitMs: 20_000 });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'request_too_large', message: "the request body is over this endpoint's limit of 95 MB" } });
    expect(reply.closed).toBe(true);
  });

  it('a route that takes no body refuses one with 413', async () => {
    const reply = await sendPartial(g.baseUrl, jsonHead('GET', '/v1/key/balance', 2, { 'x-api-key': key }), '{}');
    expect(reply.status).toBe(413);
    expect((JSON.parse(reply.body) as Json).error).toMatchObject({ code: 'request_too_large', message: 'this endpoint takes no request body' });
    // Without a body the same request is answered.
    expect((await fetch(`${g.baseUrl}/v1/key/balance`, { headers: { 'x-api-key': key } })).status).toBe(200);
  });
});

describe('the structure of a JSON body is bounded before it is parsed', () => {
  const chatBody = (extra: string) => `{"model":"chat-model","messages":[{"role":"user","content":"hi"}],"metadata_extra":${extra}}`;

  it('JSON nested beyond 128 levels is a 400 in the endpoint shape, never a 502, in a passthrough field too', async () => {
    const forwarded = g.sim.requests.length;
    for (const depth of [129, 5_000, 100_000]) {
      const response = await post('/v1/chat/completions', chatBody(nested(depth)));
      expect(response.status, `depth ${depth}`).toBe(400);
      expect(((await response.json()) as Json).error).toMatchObject({ code: 'invalid_request', message: 'the JSON body is nested more than 128 levels deep' });
    }
    const messages = await post('/v1/messages', `{"model":"msg-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"metadata":${nested(5_000)}}`);
    expect(messages.status).toBe(400);
    expect(((await messages.json()) as Json).error.type).toBe('invalid_request_error');
    const generate = await post('/v1beta/models/gem-model:generateContent', `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"x":${nested(5_000)}}`);
    expect(generate.status).toBe(400);
    expect(((await generate.json()) as Json).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(g.sim.requests).toHaveLength(forwarded);
  });

  it('a body within the bounds goes through: 128 levels are forwarded as sent', async () => {
    // The whole body is one level; the field adds 127.
    const response = await post('/v1/chat/completions', chatBody(nested(127)));
    expect(response.status).toBe(200);
    const forwarded = g.sim.requests.at(-1)!.body as Json;
    let depth = 0;
    for (let value: unknown = forwarded.metadata_extra; Array.isArray(value); value = value[0]) depth++;
    expect(depth).toBe(127);
  });

  it('more than 200,000 values is a 400, however few bytes they take', async () => {
    const many = (n: number) => `[${Array.from({ length: n }, () => '0').join(',')}]`;
    const over = await post('/v1/chat/completions', chatBody(many(200_001)));
    expect(over.status).toBe(400);
    expect(((await over.json()) as Json).error.message).toBe('the JSON body has more than 200,000 values (objects, arrays and their items)');
    const under = await post('/v1/chat/completions', chatBody(many(150_000)));
    expect(under.status).toBe(200);
  });

  it('a body that is not JSON, or empty, is a 400 in the endpoint shape', async () => {
    const broken = await post('/v1/messages', '{"model":');
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as Json).error).toMatchObject({ type: 'invalid_request_error' });
    const empty = await post('/v1/chat/completions', '');
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as Json).error.code).toBe('invalid_request');
  });
});
