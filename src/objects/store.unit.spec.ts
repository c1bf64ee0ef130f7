import { createServer, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
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
