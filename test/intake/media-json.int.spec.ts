/**
 * A media body (video, music, speech, voices, transcripts: JSON of up to 32 MB) holds no string over 4 MB,
 * checked as the body arrives (docs/operations.md, "Request intake"): the largest string such a body
 * needs is a video's reference image as a data URI, which its schema bounds at 2,000,000 characters.
 * Issue 31, item 4: one request must not make the gateway build a 32 MB string for everybody to wait on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatConfig } from '../chat/support';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';
import { chunk, jsonHead, sendPartial } from './support';

type Json = Record<string, any>;

const MiB = 1024 * 1024;
let g: SimulatedGateway;
let key: string;
beforeAll(async () => {
  g = await startSimulatedGateway(chatConfig);
  key = (await g.t.accountWithKey()).key;
});
afterAll(() => g.close());

const REFUSAL = {
  error: {
    message: "a string in the JSON body (a data URI) is over this endpoint's limit of 4 MB for one value; send larger media by URL",
    type: 'invalid_request_error',
    code: 'request_too_large',
  },
};

describe('the strings of a media JSON body', () => {
  it('a video whose data URI passes 4 MB is refused at that byte, before the rest of the body is sent', async () => {
    const opening = '{"model":"video-model","content":[{"type":"text","text":"a cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,';
    // 12 MB declared, 4 MB and a bit sent: only a refusal made on the way can answer.
    const sent = Buffer.concat([Buffer.from(opening), Buffer.alloc(4 * MiB + 64 * 1024, 'A')]);
    const reply = await sendPartial(g.baseUrl, jsonHead('POST', '/v1/videos/generations', 12 * MiB, { authorization: `Bearer ${key}` }), sent, { waitMs: 20_000 });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual(REFUSAL);
    expect(reply.closed).toBe(true);
    expect(reply.headers.connection).toBe('close');
  });

  it('a chunked speech input over 4 MB gets the same refusal, in the chat shape', async () => {
    const body = Buffer.concat([Buffer.from('{"model":"tts-model","voice":"alloy","input":"'), Buffer.alloc(5 * MiB, 'x'), Buffer.from('"}')]);
    const chunks = [];
    for (let at = 0; at < body.length; at += MiB) chunks.push(chunk(body.subarray(at, at + MiB)));
    const reply = await sendPartial(g.baseUrl, jsonHead('POST', '/v1/audio/speech', 'chunked', { authorization: `Bearer ${key}` }), Buffer.concat(chunks));
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual(REFUSAL);
    expect(reply.closed).toBe(true);
  });

  it('strings within 4 MB pass the intake, and the body keeps its 32 MB: the route itself answers', async () => {
    const uri = `data:image/png;base64,${'A'.repeat(3 * MiB)}`;
    const content = [{ type: 'text', text: 'a cat' }, ...Array.from({ length: 6 }, () => ({ type: 'image_url', image_url: { url: uri }, role: 'reference_image' }))];
    const response = await fetch(`${g.baseUrl}/v1/videos/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'no-such-video-model', content }),
    });
    // 18 MB of body, no string over 4 MB: past the intake, to the route's own checks.
    expect(response.status).toBe(400);
    expect(((await response.json()) as Json).error.code).not.toBe('request_too_large');
  });
});
