import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { lstat, mkdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { AwsClient } from 'aws4fetch';

/** An object as stored: its bytes and the content type it was put with. */
export interface StoredObject {
  readonly bytes: Buffer;
  readonly contentType: string;
}

export interface SignContext {
  readonly baseUrl: string;
  readonly now: number;
  readonly filename?: string | null;
  /** How a presigned S3 link asks the browser to show the file (default `attachment`); the local
   * store's routes decide this themselves. */
  readonly disposition?: 'attachment' | 'inline';
}

/** Source files of knowledge pages (by their `r2_key`) and hosted media outputs (`media/…`). */
export interface ObjectStore {
  readonly kind: 'local' | 's3';
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** null: no such object (or a key no object can have). */
  get(key: string): Promise<StoredObject | null>;
  /** Removing an object that is not there is not an error. */
  delete(key: string): Promise<void>;
  /** A link that downloads the object and stops working after `ttlSeconds`. */
  signedUrl(key: string, ttlSeconds: number, context: SignContext): Promise<string>;
}

export const OBJECT_KEY = /^(?!\/)(?!.*\/\/)(?!.*(^|\/)\.\.?(\/|$))[^\x00-\x1f\x7f\\]{1,512}$/u;

export class InvalidObjectKeyError extends Error {
  constructor(key: string) {
    super(`invalid object key "${key}": 1-512 characters without control characters or "\\", no leading "/", no empty, "." or ".." segments`);
  }
}

/** The gateway's own download route for the local store of knowledge source files. */
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
 *
 * `downloadPrefix` is the path of the route that serves this store's links: one store per route, each
 * with its own directory and signing secret, so a link handed out for one route opens nothing on another.
 */
export class LocalObjectStore implements ObjectStore {
  readonly kind = 'local' as const;
  constructor(
    private readonly root: string,
    private readonly signingSecret: string,
    readonly downloadPrefix: string = LOCAL_DOWNLOAD_PREFIX,
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

  async get(key: string): Promise<StoredObject | null> {
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

  private async legacyGet(key: string): Promise<StoredObject | null> {
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

  async delete(key: string): Promise<void> {
    if (!OBJECT_KEY.test(key)) return;
    await rm(this.fileOf(key), { force: true });
    // An object of the earlier layout would otherwise be read again once its new file is gone.
    const legacy = this.legacyPathOf(key);
    if (await isFile(legacy)) {
      await unlink(legacy);
      await rm(`${legacy}.meta.json`, { force: true });
    }
  }

  private signature(key: string, expires: number): string {
    return createHmac('sha256', this.signingSecret).update(`${key}\n${expires}`).digest('hex');
  }

  async signedUrl(key: string, ttlSeconds: number, context: SignContext): Promise<string> {
    const expires = context.now + ttlSeconds;
    const path = key.split('/').map(encodeURIComponent).join('/');
    return `${context.baseUrl}${this.downloadPrefix}${path}?expires=${expires}&signature=${this.signature(key, expires)}`;
  }

  /** True when the link is authentic and not expired. */
  verify(key: string, expires: number, signature: string, now: number): boolean {
    if (!Number.isInteger(expires) || expires < now) return false;
    const expected = Buffer.from(this.signature(key, expires));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

/** A directory, a missing path or one under a file is no object of the earlier layout. */
async function isFile(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isFile();
  } catch (error) {
    if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return false;
    throw error;
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

  async get(key: string): Promise<StoredObject | null> {
    if (!OBJECT_KEY.test(key)) return null;
    const response = await (await this.client()).fetch(this.urlOf(key).toString(), { method: 'GET' });
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    if (!response.ok) throw new Error(`object store refused GET ${key}: ${response.status} ${await response.text()}`);
    return { bytes: Buffer.from(await response.arrayBuffer()), contentType: response.headers.get('content-type') ?? 'application/octet-stream' };
  }

  async delete(key: string): Promise<void> {
    if (!OBJECT_KEY.test(key)) return;
    const response = await (await this.client()).fetch(this.urlOf(key).toString(), { method: 'DELETE' });
    const detail = await response.text();
    // S3 answers 204 for a key that is not there; some compatible stores answer 404.
    if (!response.ok && response.status !== 404) throw new Error(`object store refused DELETE ${key}: ${response.status} ${detail}`);
  }

  async signedUrl(key: string, ttlSeconds: number, context: Pick<SignContext, 'filename' | 'disposition'>): Promise<string> {
    const url = this.urlOf(key);
    url.searchParams.set('X-Amz-Expires', String(ttlSeconds));
    if (context.filename)
      url.searchParams.set('response-content-disposition', `${context.disposition ?? 'attachment'}; filename="${context.filename.replace(/"/g, '')}"`);
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
