/**
 * The JSON form of the image routes is bounded by what it may hold (docs/operations.md, "Request intake"):
 * one string (a data URI) at most 8 MB, the body at most 16 MB, each checked as the body arrives; the
 * spec's 95 MB stays for multipart files. Issue 31, item 4: eight parallel 93 MB JSON bodies used to be
 * read and parsed whole, freezing the event loop for everybody.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMediaHarness, type MediaHarness } from '../media/support';
import { chunk, jsonHead, sendPartial, type RawExchange } from './support';

type Json = Record<string, any>;

const MiB = 1024 * 1024;
let h: MediaHarness;
let key: string;
beforeAll(async () => {
  h = await startMediaHarness();
  key = (await h.t.accountWithKey()).key;
});
afterAll(() => h.close());
beforeEach(() => h.sim.reset());

const opening = (field = 'image') => `{"model":"img-model","prompt":"edit it","${field}":"data:image/png;base64,`;

describe('the JSON form of the image routes', () => {
  it('eight parallel bodies whose data URI passes 8 MB are each refused at that point, before the rest is sent, while /healthz answers', async () => {
    // Each declares 15 MB (within the body's 16 MB) but sends only its first 8 MB and a bit: the
    // string is over its limit there, and the other 7 MB never come.
    const sent = Buffer.concat([Buffer.from(opening()), Buffer.alloc(8 * MiB + 64 * 1024, 'A')]);
    const exchanges: Promise<RawExchange>[] = [];
    for (let i = 0; i < 8; i++) {
      const path = i % 2 === 0 ? '/v1/images/edits' : '/v1/images/generations';
      exchanges.push(sendPartial(h.baseUrl, jsonHead('POST', path, 15 * MiB, { authorization: `Bearer ${key}` }), sent, { waitMs: 30_000 }));
    }
    let settled = false;
    const all = Promise.all(exchanges).finally(() => (settled = true));
    // The loop keeps serving others while the bodies stream in and are refused.
    let probes = 0;
    do {
      const health = await fetch(`${h.baseUrl}/healthz`);
      expect(health.status).toBe(200);
      probes += 1;
    } while (!settled && probes < 1_000);
    for (const reply of await all) {
      expect(reply.status).toBe(413);
      expect(JSON.parse(reply.body)).toEqual({
        error: {
          message: "a string in the JSON body (a data URI) is over this endpoint's limit of 8 MB for one value; send larger images as multipart files (up to 95 MB)",
          type: 'invalid_request_error',
          code: 'request_too_large',
        },
      });
      // Refused before its end: the gateway closed the connection instead of waiting for the other 7 MB.
      expect(reply.closed).toBe(true);
      expect(reply.headers.connection).toBe('close');
    }
    expect(h.sim.requests).toHaveLength(0);
  });

  it('a body over 16 MB is refused at once when its length says so, and at 16 MB when it comes chunked', async () => {
    const declared = await sendPartial(h.baseUrl, jsonHead('POST', '/v1/images/generations', 17 * MiB, { authorization: `Bearer ${key}` }), opening());
    expect(declared.status).toBe(413);
    expect((JSON.parse(declared.body) as Json).error).toMatchObject({
      code: 'request_too_large',
      message: "the JSON body is over this endpoint's limit of 16 MB; send larger images as multipart files (up to 95 MB)",
    });
    expect(declared.closed).toBe(true);

    // Three 6 MB data URIs: each string within its limit, the body over its own.
    const uri = `"data:image/png;base64,${'A'.repeat(6 * MiB)}"`;
    const body = Buffer.from(`{"model":"img-model","prompt":"edit it","image":[${uri},${uri},${uri}]}`);
    const chunks = [];
    for (let at = 0; at < body.length; at += MiB) chunks.push(chunk(body.subarray(at, at + MiB)));
    const streamed = await sendPartial(h.baseUrl, jsonHead('POST', '/v1/images/edits', 'chunked', { authorization: `Bearer ${key}` }), Buffer.concat(chunks));
    expect(streamed.status).toBe(413);
    expect((JSON.parse(streamed.body) as Json).error.message).toMatch(/^the JSON body is over this endpoint's limit of 16 MB/);
    expect(streamed.closed).toBe(true);
    expect(h.sim.requests).toHaveLength(0);
  });

  it('a multipart text field is bounded as a JSON string (8 MB), a field sent as application/json too: image bytes go as files', async () => {
    const form = new FormData();
    form.append('model', 'img-model');
    form.append('prompt', 'edit it');
    form.append('image', `data:image/png;base64,${'A'.repeat(8 * MiB)}`);
    const text = await fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(text.status).toBe(413);
    expect(((await text.json()) as Json).error).toEqual({
      message: `the multipart field "image" is over this endpoint's limit of 8 MB for a text field; send images as file parts (up to 95 MB)`,
      type: 'invalid_request_error',
      code: 'request_too_large',
    });

    // A part labelled JSON is parsed by the multipart reader itself: no more than 8 MB of it.
    const field = (name: string, value: string, type?: string) =>
      `--b\r\nContent-Disposition: form-data; name="${name}"\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n${value}\r\n`;
    const body = [
      field('model', 'img-model'),
      field('prompt', 'edit it'),
      field('image_urls', JSON.stringify([`data:image/png;base64,${'A'.repeat(8 * MiB)}`]), 'application/json'),
      '--b--\r\n',
    ].join('');
    const parsed = await fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=b' }, body });
    expect(parsed.status).toBe(400);
    expect(((await parsed.json()) as Json).error.code).toBe('invalid_request');
    expect(h.sim.requests).toHaveLength(0);
  });

  it('within its bounds a JSON edit goes upstream as sent, and a multipart edit over 16 MB is still taken (its limit is 95 MB)', async () => {
    const dataUri = `data:image/png;base64,${'A'.repeat(7 * MiB)}`;
    const json = await fetch(`${h.baseUrl}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'img-model', prompt: 'edit it', image: dataUri }),
    });
    expect(json.status).toBe(200);
    expect((h.sim.requests.at(-1)!.body as Json).image).toBe(dataUri);

    const form = new FormData();
    form.append('model', 'img-model');
    form.append('prompt', 'edit it');
    form.append('image', new Blob([Buffer.alloc(20 * MiB, 7)], { type: 'image/png' }), 'big.png');
    const multipart = await fetch(`${h.baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(multipart.status).toBe(200);
    expect(h.sim.requests).toHaveLength(2);
    expect(h.sim.requests[1]!.body).toMatchObject({ files: [{ filename: 'big.png', size: 20 * MiB }] });
  });
});
