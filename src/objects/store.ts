import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { AwsClient } from 'aws4fetch';

/** Source files of knowledge pages, addressed by their `r2_key`. */
export interface ObjectStore {
  readonly kind: 'local' | 's3';
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** A link that downloads the object and stops working after `ttlSeconds`. */
  signedUrl(key: string, ttlSeconds: number, context: { baseUrl: string; now: number; filename?: string | null }): Promise<string>;
}

export const OBJECT_KEY = /^(?!\/)(?!.*\/\/)(?!.*(^|\/)\.\.?(\/|$))[^\x00-\x1f\x7f\\]{1,512}$/u;

export class InvalidObjectKeyError extends Error {
  constructor(key: string) {
    super(`invalid object key "${key}": 1-512 characters without control characters or "\\", no leading "/", no empty, "." or ".." segments`);
  }
}

/** The gateway's own download route for the local store. */
export const LOCAL_DOWNLOAD_PREFIX = '/api/v1/ext/wiki/files/';

/**
 * Objects in a directory under DATA_DIR, downloaded through the gateway with an
 * HMAC-signed, expiring link: the same contract as a presigned S3 URL.
 *
 * Each object is one file named by the SHA-256 of its key (`by-digest/ab/abcd…`): a header line
 * (its key and content type, as JSON) and then its bytes. No key can name another key's file, its
 * metadata or its temporary file, and a write replaces bytes and content type at once. Objects
 * written by earlier versions (a file at the key's own path, its content type beside it in
 * `<path>.meta.json`) are still read.
 */
export class LocalObjectStore implements ObjectStore {
  readonly kind = 'local' as const;
  constructor(
    private readonly root: string,
    private readonly signingSecret: string,
  ) {}

  private fileOf(key: string): string {
    if (!OBJECT_KEY.test(key)) throw new InvalidObjectKeyError(key);
    const digest = createHash('sha256').update(key).digest('hex');
    return join(this.root, 'by-digest', digest.slice(0, 2), digest);
  }

  /** Where an earlier version kept the object (read only). */
  private legacyPathOf(key: string): string {
    const path = resolve(this.root, ...key.split('/'));
    if (!path.startsWith(resolve(this.root) + sep)) throw new InvalidObjectKeyError(key);
    return path;
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    const file = this.fileOf(key);
    await mkdir(dirname(file), { recursive: true });
    const header = Buffer.from(`${JSON.stringify({ key, content_type: contentType })}\n`);
    // Write then rename, so a reader never sees half a file; a temporary name per write, so two
    // writes of one key never share one.
    const temporary = `${file}.${randomUUID()}.tmp`;
    try {
      await writeFile(temporary, Buffer.concat([header, bytes]));
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }

  async get(key: string): Promise<{ bytes: Buffer; contentType: string } | null> {
    try {
      const stored = await readFile(this.fileOf(key));
      const end = stored.indexOf(0x0a);
      const header = JSON.parse(stored.subarray(0, end).toString('utf8')) as { content_type?: string };
      return { bytes: stored.subarray(end + 1), contentType: header.content_type ?? 'application/octet-stream' };
    } catch (error) {
      if (error instanceof InvalidObjectKeyError) return null;
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return this.legacyGet(key);
    }
  }

  private async legacyGet(key: string): Promise<{ bytes: Buffer; contentType: string } | null> {
    try {
      const path = this.legacyPathOf(key);
      const bytes = await readFile(path);
      const meta = JSON.parse(await readFile(`${path}.meta.json`, 'utf8').catch(() => '{}')) as { content_type?: string };
      return { bytes, contentType: meta.content_type ?? 'application/octet-stream' };
    } catch (error) {
      if (['ENOENT', 'EISDIR', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '') || error instanceof InvalidObjectKeyError) return null;
      throw error;
    }
  }

  private signature(key: string, expires: number): string {
    return createHmac('sha256', this.signingSecret).update(`${key}\n${expires}`).digest('hex');
  }

  async signedUrl(key: string, ttlSeconds: number, context: { baseUrl: string; now: number }): Promise<string> {
    const expires = context.now + ttlSeconds;
    const path = key.split('/').map(encodeURIComponent).join('/');
    return `${context.baseUrl}${LOCAL_DOWNLOAD_PREFIX}${path}?expires=${expires}&signature=${this.signature(key, expires)}`;
  }

  /** True when the link is authentic and not expired. */
  verify(key: string, expires: number, signature: string, now: number): boolean {
    if (!Number.isInteger(expires) || expires < now) return false;
    const expected = Buffer.from(this.signature(key, expires));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

export interface S3Settings {
  readonly endpoint: string;
  readonly bucket: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** Any S3-compatible store (AWS S3, R2, MinIO), path-style, signed with SigV4. */
export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3' as const;
  private clientLoaded: Promise<AwsClient> | undefined;
  constructor(private readonly settings: S3Settings) {}

  /** aws4fetch is loaded on first use, so a gateway without S3 never loads it. */
  private client(): Promise<AwsClient> {
    return (this.clientLoaded ??= import('aws4fetch').then(
      ({ AwsClient }) =>
        new AwsClient({
          accessKeyId: this.settings.accessKeyId,
          secretAccessKey: this.settings.secretAccessKey,
          service: 's3',
          region: this.settings.region,
        }),
    ));
  }

  private urlOf(key: string): URL {
    if (!OBJECT_KEY.test(key)) throw new InvalidObjectKeyError(key);
    const base = this.settings.endpoint.replace(/\/+$/, '');
    return new URL(`${base}/${encodeURIComponent(this.settings.bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`);
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    const response = await (await this.client()).fetch(this.urlOf(key).toString(), {
      method: 'PUT',
      body: bytes,
      headers: { 'content-type': contentType },
    });
    if (!response.ok) throw new Error(`object store refused PUT ${key}: ${response.status} ${await response.text()}`);
  }

  async signedUrl(key: string, ttlSeconds: number, context: { filename?: string | null }): Promise<string> {
    const url = this.urlOf(key);
    url.searchParams.set('X-Amz-Expires', String(ttlSeconds));
    if (context.filename) url.searchParams.set('response-content-disposition', `attachment; filename="${context.filename.replace(/"/g, '')}"`);
    const signed = await (await this.client()).sign(url.toString(), { method: 'GET', aws: { signQuery: true } });
    return signed.url;
  }
}

export function objectStoreFromEnv(env: NodeJS.ProcessEnv, dataDir: string, signingSecret: string): ObjectStore {
  const bucket = env.S3_BUCKET?.trim();
  if (bucket) {
    const required = ['S3_ENDPOINT', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const;
    const missing = required.filter((name) => !env[name]?.trim());
    if (missing.length) throw new Error(`S3_BUCKET is set but ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not`);
    return new S3ObjectStore({
      endpoint: env.S3_ENDPOINT!.trim(),
      bucket,
      region: env.S3_REGION?.trim() || 'auto',
      accessKeyId: env.S3_ACCESS_KEY_ID!.trim(),
      secretAccessKey: env.S3_SECRET_ACCESS_KEY!.trim(),
    });
  }
  return new LocalObjectStore(join(dataDir, 'objects'), signingSecret);
}
