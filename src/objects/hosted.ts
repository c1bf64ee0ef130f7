import { createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Sql } from '../storage/sql';
import { LocalObjectStore, type ObjectStore, type StoredObject } from './store';

/** Where the local store's media links point (src/http/media/hosted/files.ts serves them). */
export const MEDIA_DOWNLOAD_PREFIX = '/v1/media/files/';

/** How long a hosted output, and every link to it, lives by default: a day, like upstream presigned links. */
export const HOSTED_TTL_SECONDS = 86_400;

/** S3 presigns links for at most 7 days: a longer-lived object could not have a link to its end. */
export const MAX_TTL_SECONDS = 7 * 86_400;

/** The most objects one sweep removes; what is left waits for the next one. */
export const SWEEP_LIMIT = 5_000;

// Deletions in flight at once: an S3 DELETE is a round trip, one at a time would crawl.
const SWEEP_PARALLEL = 8;

/** Operational storage (like idempotency keys), not an event-sourced projection: a row says that
 * bytes may be stored under `key` until `expires_at`, and is dropped only after they are deleted. */
export const HOSTED_SCHEMA = `
CREATE TABLE IF NOT EXISTS hosted_objects (
  key text PRIMARY KEY,
  account_id text NOT NULL,
  content_type text NOT NULL,
  size bigint NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS hosted_objects_expires ON hosted_objects (expires_at);`;

export interface HostedPut {
  readonly accountId: string;
  /** Given: the key is the task's (a retry of the same task replaces its output); else random. */
  readonly taskId?: string;
  /** The file name shown to the client; reduced to a safe one (`[A-Za-z0-9._-]`). */
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly contentType: string;
  /** Unix seconds. */
  readonly now: number;
  /** Base of the link (`PUBLIC_BASE_URL` or the request's origin); unused by S3's presigned links. */
  readonly baseUrl: string;
  readonly ttlSeconds?: number;
}

export interface HostedLink {
  readonly key: string;
  readonly url: string;
  /** Unix seconds: the link, and the object, end then. */
  readonly expiresAt: number;
}

export interface HostedOutputsOptions {
  /** Told of each object a sweep could not delete (its row stays, for the next sweep). */
  readonly onDeleteFailed?: (key: string, error: unknown) => void;
}

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._:-]{0,127}$/;

/** A file name that needs no quoting or encoding anywhere: a URL path, a header, a file system. */
export function safeName(name: string): string {
  const last = name.split(/[/\\]/).pop() ?? '';
  const cleaned = last
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+/, '')
    .slice(0, 100);
  return cleaned === '' ? 'output' : cleaned;
}

function segment(what: string, value: string): string {
  if (!SEGMENT.test(value)) throw new Error(`${what} "${value}" cannot be part of an object key: 1-128 of A-Z a-z 0-9 . _ : -, not starting with . : or -`);
  return value;
}

/**
 * Media outputs the gateway itself hosts (async text-to-speech audio, upstream results delivered as
 * bytes): stored under `media/{account}/{task or random}/{name}`, recorded in `hosted_objects`, handed
 * out as signed links that end with the object, deleted by `sweep` once expired.
 */
export class HostedOutputs {
  constructor(
    private readonly sql: Sql,
    readonly store: ObjectStore,
    private readonly options: HostedOutputsOptions = {},
  ) {}

  async migrate(): Promise<void> {
    await this.sql.exec(HOSTED_SCHEMA);
  }

  async put(input: HostedPut): Promise<HostedLink> {
    const ttl = input.ttlSeconds ?? HOSTED_TTL_SECONDS;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) throw new Error(`ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}, not ${ttl}`);
    const middle = input.taskId !== undefined ? segment('taskId', input.taskId) : randomBytes(16).toString('hex');
    const key = `media/${segment('accountId', input.accountId)}/${middle}/${safeName(input.name)}`;
    const expiresAt = input.now + ttl;
    // The row first: bytes are never stored without the record that gets them deleted. A write that
    // fails leaves a row whose sweep deletes nothing, which is harmless.
    await this.sql.query(
      `INSERT INTO hosted_objects (key, account_id, content_type, size, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (key) DO UPDATE SET account_id = EXCLUDED.account_id, content_type = EXCLUDED.content_type, size = EXCLUDED.size,
         created_at = EXCLUDED.created_at, expires_at = GREATEST(hosted_objects.expires_at, EXCLUDED.expires_at)`,
      [key, input.accountId, input.contentType, input.bytes.byteLength, input.now, expiresAt],
    );
    await this.store.put(key, input.bytes, input.contentType);
    const link = await this.urlFor(key, input.now, input.baseUrl);
    if (!link) throw new Error(`hosted output ${key} vanished while it was stored`);
    return link;
  }

  /** A fresh link to a hosted output that ends when the object does (never later); null when the
   * object is unknown or has no second left. */
  async urlFor(key: string, now: number, baseUrl: string): Promise<HostedLink | null> {
    const [row] = await this.sql.query<{ expires_at: string | number }>('SELECT expires_at FROM hosted_objects WHERE key = $1', [key]);
    if (!row) return null;
    const expiresAt = Number(row.expires_at);
    const ttl = expiresAt - now;
    if (ttl < 1) return null;
    const url = await this.store.signedUrl(key, ttl, { baseUrl, now, filename: key.split('/').pop()!, disposition: 'inline' });
    return { key, url, expiresAt };
  }

  /** A hosted output's bytes while it lives: null once it has expired (swept or not yet), or when unknown. */
  async read(key: string, now: number): Promise<StoredObject | null> {
    const [row] = await this.sql.query<{ expires_at: string | number }>('SELECT expires_at FROM hosted_objects WHERE key = $1', [key]);
    if (!row || Number(row.expires_at) <= now) return null;
    return this.store.get(key);
  }

  /**
   * Deletes up to `limit` expired objects, bytes first: a row goes only once its bytes are gone, so an
   * object the store failed to delete is tried again by the next sweep. Returns how many went.
   */
  async sweep(now: number, limit: number = SWEEP_LIMIT): Promise<number> {
    let deleted = 0;
    const failed = new Set<string>();
    while (deleted < limit) {
      const rows = await this.sql.query<{ key: string }>(
        'SELECT key FROM hosted_objects WHERE expires_at < $1 AND NOT (key = ANY($2::text[])) ORDER BY expires_at LIMIT $3',
        [now, [...failed], Math.min(500, limit - deleted)],
      );
      if (rows.length === 0) break;
      for (let i = 0; i < rows.length; i += SWEEP_PARALLEL) {
        const batch = rows.slice(i, i + SWEEP_PARALLEL);
        const outcomes = await Promise.all(
          batch.map(async ({ key }) => {
            try {
              await this.store.delete(key);
            } catch (error) {
              failed.add(key);
              this.options.onDeleteFailed?.(key, error);
              return 0;
            }
            // Only if still expired: a put of the same task key that raced this sweep keeps its row
            // (and so its deletion later), though not the bytes just deleted; no lock for so rare a case.
            const gone = await this.sql.query('DELETE FROM hosted_objects WHERE key = $1 AND expires_at < $2 RETURNING key', [key, now]);
            return gone.length;
          }),
        );
        deleted += outcomes.reduce((sum, n) => sum + n, 0);
      }
    }
    return deleted;
  }
}

/**
 * The store hosted outputs go to: the knowledge store's bucket when it is S3 (under `media/`, where a
 * lifecycle rule can back the sweeper up), else a local store of its own under DATA_DIR/media whose
 * links point at the media route and are signed with a key of their own.
 */
export function hostedStoreOf(objects: ObjectStore, dataDir: string, linkSecret: string): ObjectStore {
  if (objects.kind === 's3') return objects;
  const secret = createHmac('sha256', linkSecret).update('hosted-media-links').digest('hex');
  return new LocalObjectStore(join(dataDir, 'media'), secret, MEDIA_DOWNLOAD_PREFIX);
}
