import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenAddressClass } from '../../src/media-check/address';
import { MediaProbe } from '../../src/media-check/media-probe';
import type { MediaFacts, MediaProbeResult } from '../../src/media-check/port';
import { CLIP_LIMITS, checkMedia } from '../../src/media-check/rules';
import { jpegWithPadding, png, wav } from './make-media';
import { startMediaServer, startTricklingServer, type MediaServer } from './media-server';

// The committed fixtures and how they were made: test/media-check/fixtures/README.md.
const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
const photo = fixture('photo-100x100.jpg');

const FILES = {
  'wide.png': { body: png(2100, 10), type: 'image/png' },
  'apng.png': { body: png(20, 20, { animated: true }), type: 'image/png' },
  'photo.jpg': { body: photo, type: 'image/jpeg' },
  // Its dimensions come after 2 MiB of application segments: past any bounded read.
  'padded.jpg': { body: jpegWithPadding(photo, 2 * 1024 * 1024), type: 'image/jpeg' },
  'still.webp': { body: fixture('still-64x48.webp'), type: 'image/webp' },
  'animated.webp': { body: fixture('animated-32x32.webp'), type: 'image/webp' },
  'clip.mp4': { body: fixture('clip-faststart.mp4'), type: 'video/mp4' },
  'moov-at-end.mp4': { body: fixture('clip-moov-at-end.mp4'), type: 'video/mp4' },
  'hevc.mov': { body: fixture('clip-hevc.mov'), type: 'video/quicktime' },
  'tone.m4a': { body: fixture('tone.m4a'), type: 'audio/mp4' },
  'xing.mp3': { body: fixture('tone-xing.mp3'), type: 'audio/mpeg' },
  'cbr.mp3': { body: fixture('tone-cbr.mp3'), type: 'audio/mpeg' },
  'two-seconds.wav': { body: wav(2), type: 'audio/wav' },
  // 301 s of 8 kHz 8-bit audio: 2.4 MB, of which the probe reads the header only.
  'long.wav': { body: wav(301), type: 'audio/wav' },
  // A server's generic type: the format comes from the bytes.
  'mislabelled': { body: fixture('clip-faststart.mp4'), type: 'application/octet-stream' },
} as const;

let server: MediaServer;
// The test server is on loopback: allowed here, refused by default (tests below).
const open = new MediaProbe({ allowPrivateAddresses: true, timeoutMs: 3000 });

beforeAll(async () => {
  server = await startMediaServer(FILES);
});
afterAll(async () => {
  await server.close();
});

const url = (path: string) => `${server.origin}/${path}`;

function factsOf(result: MediaProbeResult): MediaFacts {
  if (result.kind !== 'probed') throw new Error(`expected probed facts, got ${JSON.stringify(result)}`);
  return result.facts;
}

const requestsTo = (path: string) => server.seen.filter((s) => s.path === `/${path}`);

describe('MediaProbe against real small media files', () => {
  it('reads an image\'s format, size and dimensions (PNG, JPEG, WebP), and whether it is animated', async () => {
    const wide = factsOf(await open.probe(url('wide.png')));
    expect(wide).toMatchObject({ url: url('wide.png'), contentType: 'image/png', bytes: FILES['wide.png'].body.length, format: 'png', width: 2100, height: 10, animated: false, durationS: null });
    expect(factsOf(await open.probe(url('photo.jpg')))).toMatchObject({ format: 'jpg', width: 100, height: 100, bytes: photo.length });
    expect(factsOf(await open.probe(url('still.webp')))).toMatchObject({ format: 'webp', width: 64, height: 48, animated: false });
    expect(factsOf(await open.probe(url('animated.webp')))).toMatchObject({ format: 'webp', width: 32, height: 32, animated: true });
    expect(factsOf(await open.probe(url('apng.png')))).toMatchObject({ format: 'png', width: 20, height: 20, animated: true });
    // HEAD, then one ranged GET of the first bytes.
    expect(requestsTo('photo.jpg').map((s) => [s.method, s.range])).toEqual([['HEAD', undefined], ['GET', 'bytes=0-1048575']]);
  });

  it('reads an mp4\'s duration, video size, codec and frame rate; a mov with HEVC; an m4a', async () => {
    expect(factsOf(await open.probe(url('clip.mp4')))).toMatchObject({ format: 'mp4', contentType: 'video/mp4', bytes: 3406, width: 160, height: 90, durationS: 2, videoCodec: 'h264', fps: 10, notes: [] });
    expect(factsOf(await open.probe(url('hevc.mov')))).toMatchObject({ format: 'mov', width: 128, height: 72, durationS: 1, videoCodec: 'hevc', fps: 25 });
    expect(factsOf(await open.probe(url('tone.m4a')))).toMatchObject({ format: 'm4a', width: null, height: null, videoCodec: null, durationS: 1.2 });
    // The bytes decide, not a generic content type.
    expect(factsOf(await open.probe(url('mislabelled')))).toMatchObject({ format: 'mp4', contentType: 'application/octet-stream', durationS: 2 });
  });

  it('reads a wav\'s duration from its header, an mp3\'s from its Xing header or (CBR) from its size', async () => {
    expect(factsOf(await open.probe(url('two-seconds.wav')))).toMatchObject({ format: 'wav', durationS: 2, bytes: 16_044 });
    const long = factsOf(await open.probe(url('long.wav')));
    expect(long).toMatchObject({ format: 'wav', durationS: 301, bytes: 2_408_044 });
    expect(factsOf(await open.probe(url('xing.mp3'))).durationS).toBeCloseTo(1.656, 2);
    expect(factsOf(await open.probe(url('cbr.mp3'))).durationS).toBeCloseTo(1.656, 2);
  });

  it('refuses, with checkMedia, what the spec\'s limits table forbids, naming the limit', async () => {
    const refusal = async (path: string, rule: (typeof CLIP_LIMITS)[keyof typeof CLIP_LIMITS]) => checkMedia(factsOf(await open.probe(url(path))), rule);
    expect(await refusal('wide.png', CLIP_LIMITS.materialImage)).toBe(`material image: each side must be under 2000 px; ${url('wide.png')} is 2100x10`);
    expect(await refusal('long.wav', CLIP_LIMITS.spokenAudio)).toBe(`spoken audio: must be at most 300 s; ${url('long.wav')} is 301 s`);
    expect(await refusal('animated.webp', CLIP_LIMITS.materialImage)).toBe(`material image: must be a still image; ${url('animated.webp')} is animated`);
    expect(await refusal('xing.mp3', CLIP_LIMITS.sourceVideo)).toBe(`source video: must be mp4, mov; ${url('xing.mp3')} is mp3`);
    expect(await refusal('still.webp', CLIP_LIMITS.cover)).toBe(`cover: must be jpg, png; ${url('still.webp')} is webp`);
    for (const [path, rule] of [['clip.mp4', CLIP_LIMITS.sourceVideo], ['hevc.mov', CLIP_LIMITS.materialVideo], ['photo.jpg', CLIP_LIMITS.cover], ['two-seconds.wav', CLIP_LIMITS.bgm], ['tone.m4a', CLIP_LIMITS.spokenAudio]] as const)
      expect(await refusal(path, rule)).toBeNull();
  });

  it('names the URL without its query (a token) in the facts', async () => {
    expect(factsOf(await open.probe(`${url('photo.jpg')}?token=secret#x`)).url).toBe(`${url('photo.jpg')}?…`);
  });

  it('falls back to a ranged GET when HEAD is refused (405), the size from Content-Range', async () => {
    const facts = factsOf(await open.probe(url('clip.mp4?nohead')));
    expect(facts).toMatchObject({ contentType: 'video/mp4', bytes: 3406, format: 'mp4', durationS: 2 });
    expect(requestsTo('clip.mp4').slice(-2).map((s) => [s.method, s.range])).toEqual([['HEAD', undefined], ['GET', 'bytes=0-1048575']]);
  });

  it('stops reading at maxReadBytes when the server ignores Range and sends the whole file', async () => {
    const bounded = new MediaProbe({ allowPrivateAddresses: true, maxReadBytes: 256 * 1024 });
    const facts = factsOf(await bounded.probe(url('padded.jpg?norange')));
    // Had it read on, the dimensions (after 2 MiB) would be known.
    expect(facts).toMatchObject({ format: 'jpg', bytes: FILES['padded.jpg'].body.length, width: null, height: null });
    expect(facts.notes).toEqual(["the image's dimensions are not in its first 262144 bytes"]);
    // Where the format needs little, little is read even of a whole-file answer.
    expect(factsOf(await bounded.probe(url('long.wav?norange')))).toMatchObject({ durationS: 301, bytes: 2_408_044 });
  });

  it('reads an mp4\'s index from the end of the file with a second range; without ranges its duration is unknown', async () => {
    const small = new MediaProbe({ allowPrivateAddresses: true, maxReadBytes: 1024 });
    expect(factsOf(await small.probe(url('clip.mp4')))).toMatchObject({ durationS: 2, width: 160 });
    const tail = factsOf(await small.probe(url('moov-at-end.mp4')));
    expect(tail).toMatchObject({ format: 'mp4', durationS: 2, width: 160, height: 90, videoCodec: 'h264', fps: 10, notes: [] });
    const ranges = requestsTo('moov-at-end.mp4').map((s) => s.range);
    expect(ranges[1]).toBe('bytes=0-1023');
    expect(ranges[2]).toMatch(/^bytes=\d{4}-\d{4}$/);

    const partial = factsOf(await small.probe(url('moov-at-end.mp4?norange')));
    expect(partial).toMatchObject({ format: 'mp4', bytes: 3406, durationS: null, width: null, height: null, videoCodec: null });
    expect(partial.notes).toEqual([
      `the mp4's index (moov box) is not in the first 1024 bytes (the file is not "fast start") and the server does not serve ranges: its duration, dimensions, codec and frame rate are unknown`,
    ]);
  });

  it('passes on (unprobed) a URL that answers 404, no server, a redirect loop, a host that does not resolve in time', async () => {
    expect(await open.probe(url('missing.mp4'))).toEqual({ kind: 'unprobed', reason: 'the server answered 404' });
    const closed = await open.probe('http://127.0.0.1:1/x.mp4');
    expect(closed).toMatchObject({ kind: 'unprobed', reason: expect.stringContaining('ECONNREFUSED') });
    expect(await open.probe(url('loop'))).toEqual({ kind: 'unprobed', reason: 'more than 5 redirects' });
    const stuck = new MediaProbe({ timeoutMs: 300 }, { lookup: () => new Promise(() => {}) });
    expect(await stuck.probe('https://slow-dns.test/a.mp4')).toEqual({ kind: 'unprobed', reason: 'no answer within 300 ms' });
  });

  it('gives up within its time limit on a server that trickles its answer', async () => {
    const slow = await startTricklingServer();
    const quick = new MediaProbe({ allowPrivateAddresses: true, timeoutMs: 400 });
    try {
      const started = Date.now();
      expect(await quick.probe(`${slow.origin}/slow.png`)).toEqual({ kind: 'unprobed', reason: 'no answer within 400 ms' });
      expect(Date.now() - started).toBeLessThan(1500);
      // Headers at once, then the body a byte at a time: HEAD's facts stay, the read is cut.
      const bodyStarted = Date.now();
      const facts = factsOf(await quick.probe(url('wide.png?trickle')));
      expect(Date.now() - bodyStarted).toBeLessThan(1500);
      expect(facts).toMatchObject({ contentType: 'image/png', bytes: FILES['wide.png'].body.length, format: 'png', width: null });
      expect(facts.notes?.[0]).toMatch(/^reading stopped after \d+ bytes at the time limit$/);
    } finally {
      await slow.close();
    }
  });
});

describe('MediaProbe: what it refuses to fetch (SSRF)', () => {
  const guarded = new MediaProbe({ timeoutMs: 2000 });

  it('refuses URLs that are not http(s)', async () => {
    const others = [['ftp://example.com/a.mp4', 'ftp'], ['file:///etc/passwd', 'file'], ['data:image/png;base64,iVBORw0KGgo=', 'data'], ['gopher://x/', 'gopher']] as const;
    for (const [u, scheme] of others)
      expect(await guarded.probe(u)).toEqual({ kind: 'refused', message: `media URLs must be http(s), not ${scheme}` });
    expect(await guarded.probe('not a url')).toEqual({ kind: 'refused', message: 'the media URL is not a valid URL' });
  });

  it('refuses loopback by default, and fetches it with allowPrivateAddresses', async () => {
    const before = server.seen.length;
    expect(await guarded.probe(url('photo.jpg'))).toEqual({ kind: 'refused', message: 'the URL names 127.0.0.1, a loopback address; media URLs must be on public addresses' });
    expect(await guarded.probe(`http://[::ffff:127.0.0.1]:${server.port}/photo.jpg`)).toMatchObject({ kind: 'refused', message: expect.stringContaining('a loopback address') });
    // Other spellings of loopback: the URL parser makes them dotted quads before the check sees them.
    for (const host of ['2130706433', '0x7f.1', '127.1'])
      expect(await guarded.probe(`http://${host}:${server.port}/photo.jpg`)).toMatchObject({ kind: 'refused', message: expect.stringContaining('127.0.0.1, a loopback address') });
    // localhost by name (RFC 6761), with or without its trailing dot; and IPv4-translated IPv6 (issue 31, item 6).
    for (const host of ['localhost', 'localhost.', 'LOCALHOST..'])
      expect(await guarded.probe(`http://${host}:${server.port}/photo.jpg`)).toMatchObject({ kind: 'refused', message: 'the URL names localhost, a loopback name; media URLs must be on public addresses' });
    expect(await guarded.probe(`http://[::ffff:0:127.0.0.1]:${server.port}/photo.jpg`)).toMatchObject({ kind: 'refused', message: expect.stringContaining('a loopback address') });
    expect(server.seen.length).toBe(before); // nothing was fetched
    expect(factsOf(await open.probe(url('photo.jpg'))).width).toBe(100);
  });

  it('refuses a host name resolving to the cloud metadata address, or to any private address among public ones', async () => {
    const lookup = async (host: string) =>
      host === 'metadata.test' ? [{ address: '169.254.169.254', family: 4 as const }] : [{ address: '93.184.215.14', family: 4 as const }, { address: '10.0.0.7', family: 4 as const }];
    const probe = new MediaProbe({ timeoutMs: 2000 }, { lookup });
    expect(await probe.probe('http://metadata.test/latest/meta-data/')).toEqual({
      kind: 'refused',
      message: 'the URL names metadata.test, which resolves to 169.254.169.254, the cloud metadata address (link-local); media URLs must be on public addresses',
    });
    expect(await probe.probe('https://mixed.test/a.png')).toMatchObject({ kind: 'refused', message: expect.stringContaining('10.0.0.7, a private address (RFC 1918)') });
  });

  it('connects to the address it checked, with the URL\'s host name in the Host header (no DNS rebinding)', async () => {
    let lookups = 0;
    // A rebinding resolver: the checked answer first, another one after.
    const lookup = async () => (lookups++ === 0 ? [{ address: '127.0.0.1', family: 4 as const }] : [{ address: '10.9.9.9', family: 4 as const }]);
    const probe = new MediaProbe({ allowPrivateAddresses: true }, { lookup });
    expect(factsOf(await probe.probe(`http://media.test:${server.port}/photo.jpg`))).toMatchObject({ width: 100, url: `http://media.test:${server.port}/photo.jpg` });
    expect(lookups).toBe(1);
    expect(server.seen.slice(-2).map((s) => [s.method, s.host])).toEqual([['HEAD', `media.test:${server.port}`], ['GET', `media.test:${server.port}`]]);
  });

  it('checks every redirect hop: a redirect to loopback, a private or the metadata address is refused', async () => {
    // The test server stands for a public host; every other address is judged as usual.
    const probe = new MediaProbe({ timeoutMs: 2000 }, { forbidden: (a) => (a === '127.0.0.1' ? null : forbiddenAddressClass(a)), lookup: async () => [{ address: '192.168.1.20', family: 4 }] });
    const redirect = (to: string) => url(`redirect?to=${encodeURIComponent(to)}`);
    expect(factsOf(await probe.probe(redirect(url('photo.jpg')))).width).toBe(100);
    expect(await probe.probe(redirect(`http://127.0.0.2:${server.port}/photo.jpg`))).toEqual({ kind: 'refused', message: 'the URL redirects to 127.0.0.2, a loopback address; media URLs must be on public addresses' });
    expect(await probe.probe(redirect('http://169.254.169.254/latest/meta-data/'))).toMatchObject({ kind: 'refused', message: expect.stringContaining('the cloud metadata address') });
    expect(await probe.probe(redirect('http://intranet.test/x.mp4'))).toEqual({
      kind: 'refused',
      message: 'the URL redirects to intranet.test, which resolves to 192.168.1.20, a private address (RFC 1918); media URLs must be on public addresses',
    });
    expect(await probe.probe(redirect('file:///etc/passwd'))).toEqual({ kind: 'refused', message: 'the URL redirects to a file URL; media URLs must be http(s)' });
  });
});
