/**
 * Hosted media outputs through a whole gateway: a put output downloads by its signed link (whole and
 * by range, no API key), is refused once expired (the gateway's clock), and is gone after the sweep,
 * row and bytes. On PGlite, or Postgres with DATABASE_URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../src/objects/store';
import { startTestGateway, type TestGateway } from '../support/gateway';

let clock = 1_800_000_000;
let t: TestGateway;
const AUDIO = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));

beforeAll(async () => {
  t = await startTestGateway({ now: () => clock });
});
afterAll(() => t?.close());

const get = (url: string, headers: Record<string, string> = {}) => {
  const { pathname, search } = new URL(url);
  return t.gateway.app.inject({ method: 'GET', url: pathname + search, headers });
};

const expectNotFound = (response: Awaited<ReturnType<typeof get>>) => {
  expect(response.statusCode, response.body).toBe(404);
  expect(response.json()).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: 'not_found' } });
};

describe('hosted media outputs', () => {
  it('a put output downloads by its link without an API key, whole and by range, until it expires; the sweep removes it', async () => {
    const { hosted } = t.gateway;
    const link = await hosted.put({ accountId: 'acct_media1', taskId: 'tts_1', name: 'speech.mp3', bytes: AUDIO, contentType: 'audio/mpeg', now: clock, baseUrl: 'http://gw.test' });
    expect(link.url).toMatch(/^http:\/\/gw\.test\/v1\/media\/files\/media\/acct_media1\/tts_1\/speech\.mp3\?expires=\d+&signature=[0-9a-f]{64}$/);
    expect(link.expiresAt).toBe(clock + 86_400);

    const whole = await get(link.url);
    expect(whole.statusCode, whole.body).toBe(200);
    expect(whole.rawPayload).toEqual(AUDIO);
    expect(whole.headers).toMatchObject({
      'content-type': 'audio/mpeg',
      'content-length': '1000',
      'content-disposition': 'inline; filename="speech.mp3"',
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, max-age=86400',
      'accept-ranges': 'bytes',
    });

    clock += 400;
    const part = await get(link.url, { range: 'bytes=100-199' });
    expect(part.statusCode).toBe(206);
    expect(part.rawPayload).toEqual(AUDIO.subarray(100, 200));
    expect(part.headers).toMatchObject({ 'content-range': 'bytes 100-199/1000', 'content-length': '100', 'cache-control': 'private, max-age=86000' });
    const tail = await get(link.url, { range: 'bytes=-10' });
    expect(tail.statusCode).toBe(206);
    expect(tail.headers['content-range']).toBe('bytes 990-999/1000');

    const beyond = await get(link.url, { range: 'bytes=1000-' });
    expect(beyond.statusCode).toBe(416);
    expect(beyond.headers['content-range']).toBe('bytes */1000');
    expect(beyond.json().error).toMatchObject({ code: 'range_not_satisfiable', type: 'invalid_request_error' });

    // A fresh link for the same output ends when the output does.
    const fresh = await hosted.urlFor(link.key, clock, 'http://gw.test');
    expect(fresh?.expiresAt).toBe(link.expiresAt);
    expect(new URL(fresh!.url).searchParams.get('expires')).toBe(String(link.expiresAt));
    expect((await get(fresh!.url)).statusCode).toBe(200);

    // Altered links: another key, a later expiry, another signature, none at all.
    const url = new URL(link.url);
    const signature = url.searchParams.get('signature')!;
    expectNotFound(await get(link.url.replace('speech.mp3', 'other.mp3')));
    expectNotFound(await get(link.url.replace(`expires=${link.expiresAt}`, `expires=${link.expiresAt + 86_400}`)));
    expectNotFound(await get(link.url.replace(signature, signature.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')))));
    expectNotFound(await get(`http://gw.test${url.pathname}`));
    expectNotFound(await get(`http://gw.test/v1/media/files/media/acct_media1/none/x.mp3?expires=${link.expiresAt}&signature=${signature}`));

    // Expired by the gateway's clock: refused, though the bytes are still there until the sweep.
    clock = link.expiresAt + 1;
    expectNotFound(await get(link.url));
    expect(await hosted.urlFor(link.key, clock, 'http://gw.test')).toBeNull();
    expect(await hosted.store.get(link.key)).not.toBeNull();

    expect(await hosted.sweep(clock)).toBeGreaterThanOrEqual(1);
    expect(await t.db.sql.query('SELECT key FROM hosted_objects WHERE key = $1', [link.key])).toEqual([]);
    expect(await hosted.store.get(link.key)).toBeNull();
  });

  it('bytes of a type a browser could run are only downloaded, never shown inline', async () => {
    const link = await t.gateway.hosted.put({ accountId: 'acct_media1', name: 'page.html', bytes: Buffer.from('<script>alert(1)</script>'), contentType: 'text/html', now: clock, baseUrl: 'http://gw.test' });
    const response = await get(link.url);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-disposition']).toBe('attachment; filename="page.html"');
    expect(response.headers['content-security-policy']).toBe('sandbox');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
  });

  it('without S3 the store is a local one of its own, linked to the media route; the route is in the OpenAPI document', async () => {
    expect(t.gateway.hosted.store).toBeInstanceOf(LocalObjectStore);
    expect((t.gateway.hosted.store as LocalObjectStore).downloadPrefix).toBe('/v1/media/files/');
    const doc = (await t.gateway.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const op = doc.paths['/v1/media/files/{key}'].get;
    expect(op).toMatchObject({ operationId: 'downloadHostedMedia', security: [] });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '206', '404', '416']));
  });
});
