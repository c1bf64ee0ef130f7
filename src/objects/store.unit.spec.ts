import { createServer, type IncomingMessage } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
