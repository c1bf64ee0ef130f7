import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidObjectKeyError, LocalObjectStore, objectStoreFromEnv, S3ObjectStore } from '../../src/objects/store';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('LocalObjectStore', () => {
  it('round-trips bytes, signs links that expire, and refuses keys that escape its directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'objects-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir, 'secret');
    const bytes = Buffer.from([0, 1, 2, 255, 254]);
    await store.put('a/b c/é.bin', bytes, 'application/x-test');
    expect(await store.get('a/b c/é.bin')).toEqual({ bytes, contentType: 'application/x-test' });
    expect(await store.get('a/missing')).toBeNull();

    const url = new URL(await store.signedUrl('a/b c/é.bin', 3600, { baseUrl: 'http://gw', now: 1000 }));
    expect(url.searchParams.get('expires')).toBe('4600');
    const signature = url.searchParams.get('signature')!;
    expect(store.verify('a/b c/é.bin', 4600, signature, 4600)).toBe(true);
    expect(store.verify('a/b c/é.bin', 4600, signature, 4601)).toBe(false);
    expect(store.verify('a/b c/é.bin', 4601, signature, 1000)).toBe(false);
    expect(store.verify('a/other', 4600, signature, 1000)).toBe(false);
    // Another secret signs differently.
    expect(new LocalObjectStore(dir, 'other').verify('a/b c/é.bin', 4600, signature, 1000)).toBe(false);

    for (const key of ['../x', 'a/../../x', '/abs', 'a//b', './x', '', 'a\\b', 'x\u0000y'])
      await expect(store.put(key, bytes, 'text/plain'), JSON.stringify(key)).rejects.toBeInstanceOf(InvalidObjectKeyError);
  });
});

describe('S3ObjectStore', () => {
  it('PUTs path-style with SigV4 and presigns GET links for 3600 s', async () => {
    const seen: Array<{ method: string; url: string; auth: string | undefined; type: string | undefined; body: Buffer }> = [];
    const server = createServer((request: IncomingMessage, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        seen.push({ method: request.method!, url: request.url!, auth: request.headers.authorization, type: request.headers['content-type'], body: Buffer.concat(chunks) });
        response.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const store = objectStoreFromEnv({ S3_BUCKET: 'bucket', S3_ENDPOINT: endpoint, S3_ACCESS_KEY_ID: 'AKID', S3_SECRET_ACCESS_KEY: 'SECRET' }, '/nowhere', 'x');
      expect(store).toBeInstanceOf(S3ObjectStore);
      await store.put('kb/a b/file.md', Buffer.from('hello'), 'text/markdown');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ method: 'PUT', url: '/bucket/kb/a%20b/file.md', type: 'text/markdown' });
      expect(seen[0]!.auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AKID\//);
      expect(seen[0]!.body.toString()).toBe('hello');

      const url = new URL(await store.signedUrl('kb/a b/file.md', 3600, { baseUrl: 'ignored', now: 0, filename: 'file.md' }));
      expect(url.origin).toBe(endpoint);
      expect(url.pathname).toBe('/bucket/kb/a%20b/file.md');
      expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');
      expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
      expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
      expect(url.searchParams.get('response-content-disposition')).toBe('attachment; filename="file.md"');
    } finally {
      server.close();
    }
  });

  it('requires the endpoint and credentials when S3_BUCKET is set', () => {
    expect(() => objectStoreFromEnv({ S3_BUCKET: 'b' }, '/nowhere', 'x')).toThrow(/S3_ENDPOINT/);
  });
});
