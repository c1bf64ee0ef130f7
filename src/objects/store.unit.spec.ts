import { createServer, type IncomingMessage } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidObjectKeyError, LocalObjectStore, S3ObjectStore, objectStoreFromEnv } from './store';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('local object store', () => {
  it('stores bytes and signs links that expire and cannot be altered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir, 'secret');
    await store.put('kb/a/notes one.md', Buffer.from('hello'), 'text/markdown');
    expect((await store.get('kb/a/notes one.md'))?.bytes.toString()).toBe('hello');
    const url = new URL(await store.signedUrl('kb/a/notes one.md', 3600, { baseUrl: 'https://gw.example', now: 1000 }));
    expect(url.pathname).toBe('/api/v1/ext/wiki/files/kb/a/notes%20one.md');
    const expires = Number(url.searchParams.get('expires'));
    const signature = url.searchParams.get('signature')!;
    expect(expires).toBe(4600);
    expect(store.verify('kb/a/notes one.md', expires, signature, 4600)).toBe(true);
    expect(store.verify('kb/a/notes one.md', expires, signature, 4601)).toBe(false);
    expect(store.verify('kb/a/other.md', expires, signature, 2000)).toBe(false);
    expect(store.verify('kb/a/notes one.md', expires + 1, signature, 2000)).toBe(false);
    expect(new LocalObjectStore(dir, 'other secret').verify('kb/a/notes one.md', expires, signature, 2000)).toBe(false);
  });

  it('refuses keys that would leave its directory', async () => {
    const store = new LocalObjectStore(mkdtempSync(join(tmpdir(), 'objects-')), 's');
    for (const key of ['../x', 'a/../../x', '/abs', 'a//b', '', 'a/./b'])
      await expect(store.put(key, Buffer.from(''), 'text/plain'), key).rejects.toBeInstanceOf(InvalidObjectKeyError);
    expect(await store.get('../etc/passwd')).toBeNull();
  });
});

describe('S3-compatible object store', () => {
  it('PUTs path-style with a SigV4 signature and presigns GET links for one hour', async () => {
    const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (d) => (body += d));
      request.on('end', () => {
        seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
        response.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const store = new S3ObjectStore({ endpoint, bucket: 'kb-sources', region: 'auto', accessKeyId: 'AKID', secretAccessKey: 'SECRET' });
      await store.put('kb/a/page.md', Buffer.from('# page'), 'text/markdown');
      expect(seen[0]).toMatchObject({ method: 'PUT', url: '/kb-sources/kb/a/page.md', body: '# page' });
      expect(seen[0]!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKID\/\d{8}\/auto\/s3\/aws4_request, SignedHeaders=.*, Signature=[0-9a-f]{64}$/);
      const link = new URL(await store.signedUrl('kb/a/page.md', 3600, { filename: 'page.md' }));
      expect(link.origin + link.pathname).toBe(`${endpoint}/kb-sources/kb/a/page.md`);
      expect(link.searchParams.get('X-Amz-Expires')).toBe('3600');
      expect(link.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
      expect(link.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
      expect(link.searchParams.get('response-content-disposition')).toBe('attachment; filename="page.md"');
    } finally {
      server.close();
    }
  });

  it('is chosen by S3_BUCKET and says which setting is missing', () => {
    expect(objectStoreFromEnv({}, '/tmp/x', 's').kind).toBe('local');
    expect(() => objectStoreFromEnv({ S3_BUCKET: 'b', S3_ENDPOINT: 'http://x' }, '/tmp/x', 's')).toThrow(/S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY are not/);
    expect(objectStoreFromEnv({ S3_BUCKET: 'b', S3_ENDPOINT: 'http://x', S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 's' }, '/tmp/x', 's').kind).toBe('s3');
  });
});

describe('local object store layout', () => {
  it('an object named like another one\'s metadata or temporary file leaves that object alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir, 'secret');
    await store.put('kb/report.pdf', Buffer.from('%PDF-1.7'), 'application/pdf');
    await store.put('kb/report.pdf.meta.json', Buffer.from('{"content_type":"text/html"}'), 'application/json');
    await store.put('kb/report.pdf.tmp', Buffer.from('<html>'), 'text/html');
    expect(await store.get('kb/report.pdf')).toEqual({ bytes: Buffer.from('%PDF-1.7'), contentType: 'application/pdf' });
    expect(await store.get('kb/report.pdf.meta.json')).toEqual({ bytes: Buffer.from('{"content_type":"text/html"}'), contentType: 'application/json' });
    expect(await store.get('kb/report.pdf.tmp')).toEqual({ bytes: Buffer.from('<html>'), contentType: 'text/html' });
  });

  it('an object and a "directory" of the same name can both exist', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir, 's');
    await store.put('a', Buffer.from('file'), 'text/plain');
    await store.put('a/b', Buffer.from('nested'), 'text/plain');
    expect((await store.get('a'))?.bytes.toString()).toBe('file');
    expect((await store.get('a/b'))?.bytes.toString()).toBe('nested');
  });

  it('reads objects written in the earlier layout (the key as a path, the type beside it)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'kb'), { recursive: true });
    writeFileSync(join(dir, 'kb', 'old.md'), '# old');
    writeFileSync(join(dir, 'kb', 'old.md.meta.json'), JSON.stringify({ content_type: 'text/markdown' }));
    const store = new LocalObjectStore(dir, 's');
    expect(await store.get('kb/old.md')).toEqual({ bytes: Buffer.from('# old'), contentType: 'text/markdown' });
    // Written again, the object is read from the new layout.
    await store.put('kb/old.md', Buffer.from('# new'), 'text/markdown');
    expect((await store.get('kb/old.md'))?.bytes.toString()).toBe('# new');
    expect(await store.get('kb')).toBeNull();
  });
});

describe('local object store: get and delete', () => {
  it('deletes an object (again without error), leaves its neighbours, and refuses nothing for a bad key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir, 's');
    await store.put('media/a/1/x.mp3', Buffer.from('ID3'), 'audio/mpeg');
    await store.put('media/a/1/y.mp3', Buffer.from('other'), 'audio/mpeg');
    expect(await store.get('media/a/1/x.mp3')).toEqual({ bytes: Buffer.from('ID3'), contentType: 'audio/mpeg' });
    await store.delete('media/a/1/x.mp3');
    expect(await store.get('media/a/1/x.mp3')).toBeNull();
    await store.delete('media/a/1/x.mp3');
    await store.delete('never/there');
    await store.delete('../escape');
    expect((await store.get('media/a/1/y.mp3'))?.bytes.toString()).toBe('other');
  });

  it('deletes an object of the earlier layout too (else it would be read again), and no directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'kb'), { recursive: true });
    writeFileSync(join(dir, 'kb', 'old.md'), '# old');
    writeFileSync(join(dir, 'kb', 'old.md.meta.json'), JSON.stringify({ content_type: 'text/markdown' }));
    const store = new LocalObjectStore(dir, 's');
    await store.delete('kb');
    expect((await store.get('kb/old.md'))?.bytes.toString()).toBe('# old');
    await store.delete('kb/old.md');
    expect(await store.get('kb/old.md')).toBeNull();
    expect(existsSync(join(dir, 'kb', 'old.md.meta.json'))).toBe(false);
  });

  it('signs links for the route it is given; the wiki route stays the default', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    const media = new LocalObjectStore(dir, 'media secret', '/v1/media/files/');
    const url = new URL(await media.signedUrl('media/acct_1/t1/speech.mp3', 60, { baseUrl: 'https://gw.example', now: 1000 }));
    expect(url.pathname).toBe('/v1/media/files/media/acct_1/t1/speech.mp3');
    expect(url.searchParams.get('expires')).toBe('1060');
    const signature = url.searchParams.get('signature')!;
    expect(media.verify('media/acct_1/t1/speech.mp3', 1060, signature, 1060)).toBe(true);
    // Tampered key, extended expiry, or past it: refused.
    expect(media.verify('media/acct_2/t1/speech.mp3', 1060, signature, 1000)).toBe(false);
    expect(media.verify('media/acct_1/t1/speech.mp3', 999_999, signature, 1000)).toBe(false);
    expect(media.verify('media/acct_1/t1/speech.mp3', 1060, signature, 1061)).toBe(false);
    expect(media.verify('media/acct_1/t1/speech.mp3', 1060, signature.replace(/^./, (c) => (c === '0' ? '1' : '0')), 1000)).toBe(false);
    // A store signing with another secret (the wiki's) does not take the media link.
    expect(new LocalObjectStore(dir, 'wiki secret').verify('media/acct_1/t1/speech.mp3', 1060, signature, 1000)).toBe(false);
    expect(new URL(await new LocalObjectStore(dir, 's').signedUrl('kb/a.md', 60, { baseUrl: 'http://gw', now: 0 })).pathname).toBe('/api/v1/ext/wiki/files/kb/a.md');
  });
});

describe('S3-compatible object store: get and delete', () => {
  it('GETs and DELETEs path-style with SigV4; a missing object is null, a missing delete is fine, a refusal throws', async () => {
    const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }> = [];
    const objects = new Map<string, { body: Buffer; type: string }>([['/media-bucket/media/acct_1/t/a%20b.mp3', { body: Buffer.from([1, 2, 3]), type: 'audio/mpeg' }]]);
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        seen.push({ method: request.method!, url: request.url!, headers: request.headers });
        if (request.url!.includes('forbidden')) return response.writeHead(403).end('<Error><Code>AccessDenied</Code></Error>');
        const object = objects.get(request.url!);
        if (request.method === 'GET') {
          if (!object) return response.writeHead(404).end('<Error><Code>NoSuchKey</Code></Error>');
          return response.writeHead(200, { 'content-type': object.type }).end(object.body);
        }
        if (request.method === 'DELETE') {
          objects.delete(request.url!);
          return response.writeHead(request.url!.includes('404') ? 404 : 204).end();
        }
        response.writeHead(405).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const store = new S3ObjectStore({ endpoint, bucket: 'media-bucket', region: 'auto', accessKeyId: 'AKID', secretAccessKey: 'SECRET' });
      expect(await store.get('media/acct_1/t/a b.mp3')).toEqual({ bytes: Buffer.from([1, 2, 3]), contentType: 'audio/mpeg' });
      expect(seen[0]).toMatchObject({ method: 'GET', url: '/media-bucket/media/acct_1/t/a%20b.mp3' });
      for (const request of seen) {
        expect(request.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKID\/\d{8}\/auto\/s3\/aws4_request, SignedHeaders=.*host.*x-amz-date.*, Signature=[0-9a-f]{64}$/);
        expect(request.headers['x-amz-content-sha256']).toBeDefined();
      }
      await store.delete('media/acct_1/t/a b.mp3');
      expect(seen[1]).toMatchObject({ method: 'DELETE', url: '/media-bucket/media/acct_1/t/a%20b.mp3' });
      expect(seen[1]!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKID\//);
      expect(await store.get('media/acct_1/t/a b.mp3')).toBeNull();
      await store.delete('media/acct_1/t/a b.mp3');
      await store.delete('media/404');
      await expect(store.get('media/forbidden')).rejects.toThrow(/refused GET media\/forbidden: 403/);
      await expect(store.delete('media/forbidden')).rejects.toThrow(/refused DELETE media\/forbidden: 403/);
      // A key no object can have is never sent.
      const sent = seen.length;
      expect(await store.get('../x')).toBeNull();
      await store.delete('a//b');
      expect(seen).toHaveLength(sent);

      const inline = new URL(await store.signedUrl('media/acct_1/t/a.mp3', 120, { filename: 'a.mp3', disposition: 'inline' }));
      expect(inline.searchParams.get('response-content-disposition')).toBe('inline; filename="a.mp3"');
      expect(inline.searchParams.get('X-Amz-Expires')).toBe('120');
    } finally {
      server.close();
    }
  });
});
