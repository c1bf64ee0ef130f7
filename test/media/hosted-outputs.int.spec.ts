/**
 * The HostedOutputs service on its own: keys, the table, links that never outlive their object, and
 * the sweep (bytes first, rows after; a store failure keeps the row). On PGlite, and on Postgres too
 * when DATABASE_URL is set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostedOutputs, hostedStoreOf, MEDIA_DOWNLOAD_PREFIX, safeName } from '../../src/objects/hosted';
import { LocalObjectStore, S3ObjectStore, type ObjectStore } from '../../src/objects/store';
import { pgliteDatabase, postgresDatabase, type TestDatabase } from '../support/storage';

const engines: Array<[string, () => Promise<TestDatabase>]> = [['pglite', pgliteDatabase]];
const url = process.env.DATABASE_URL;
if (url) engines.push(['postgres', () => postgresDatabase(url)]);

const NOW = 1_800_000_000;
const BASE = 'https://gw.example';
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A local store whose deletes fail for keys in `failing`. */
class FlakyStore extends LocalObjectStore {
  readonly failing = new Set<string>();
  override async delete(key: string): Promise<void> {
    if (this.failing.has(key)) throw new Error('store unreachable');
    return super.delete(key);
  }
}

describe.each(engines)('hosted outputs on %s', (_label, open) => {
  let db: TestDatabase;
  let store: FlakyStore;
  let hosted: HostedOutputs;
  const failures: string[] = [];
  beforeAll(async () => {
    db = await open();
    const dir = mkdtempSync(join(tmpdir(), 'hosted-'));
    dirs.push(dir);
    store = new FlakyStore(dir, 'secret', MEDIA_DOWNLOAD_PREFIX);
    hosted = new HostedOutputs(db.sql, store, { onDeleteFailed: (key) => failures.push(key) });
    await hosted.migrate();
    await hosted.migrate(); // idempotent
  });
  afterAll(() => db.drop());

  const row = async (key: string) =>
    (await db.sql.query<Record<string, unknown>>('SELECT account_id, content_type, size::text AS size, created_at::text AS created_at, expires_at::text AS expires_at FROM hosted_objects WHERE key = $1', [key]))[0];

  it('put stores the bytes under media/{account}/{id}/{name}, records them, and links them for 24 hours', async () => {
    const link = await hosted.put({ accountId: 'acct_1', name: 'speech.mp3', bytes: Buffer.from('ID3audio'), contentType: 'audio/mpeg', now: NOW, baseUrl: BASE });
    expect(link.key).toMatch(/^media\/acct_1\/[0-9a-f]{32}\/speech\.mp3$/);
    expect(link.expiresAt).toBe(NOW + 86_400);
    const url = new URL(link.url);
    expect(url.origin + url.pathname).toBe(`${BASE}/v1/media/files/${link.key}`);
    expect(url.searchParams.get('expires')).toBe(String(NOW + 86_400));
    expect(await store.get(link.key)).toEqual({ bytes: Buffer.from('ID3audio'), contentType: 'audio/mpeg' });
    expect(await row(link.key)).toEqual({ account_id: 'acct_1', content_type: 'audio/mpeg', size: '8', created_at: String(NOW), expires_at: String(NOW + 86_400) });
    // Two puts of one name get two keys.
    const again = await hosted.put({ accountId: 'acct_1', name: 'speech.mp3', bytes: Buffer.from('x'), contentType: 'audio/mpeg', now: NOW, baseUrl: BASE });
    expect(again.key).not.toBe(link.key);
  });

  it('a task id makes the key (a retry replaces the output); names are made safe; bad ids and lifetimes are refused', async () => {
    const first = await hosted.put({ accountId: 'acct_1', taskId: 'task_42', name: '../../etc/Speech "final".MP3', bytes: Buffer.from('one'), contentType: 'audio/mpeg', now: NOW, baseUrl: BASE, ttlSeconds: 60 });
    expect(first.key).toBe('media/acct_1/task_42/Speech_final_.MP3');
    const second = await hosted.put({ accountId: 'acct_1', taskId: 'task_42', name: 'Speech "final".MP3', bytes: Buffer.from('two'), contentType: 'audio/mpeg', now: NOW + 10, baseUrl: BASE, ttlSeconds: 60 });
    expect(second).toMatchObject({ key: first.key, expiresAt: NOW + 70 });
    expect((await store.get(first.key))?.bytes.toString()).toBe('two');
    expect(safeName('')).toBe('output');
    expect(safeName('...')).toBe('output');
    expect(safeName('a\\b\\voix é.wav')).toBe('voix_.wav');
    const base = { name: 'a.mp3', bytes: Buffer.from('x'), contentType: 'audio/mpeg', now: NOW, baseUrl: BASE };
    await expect(hosted.put({ ...base, accountId: '../x' })).rejects.toThrow(/accountId/);
    await expect(hosted.put({ ...base, accountId: 'acct_1', taskId: 'a/b' })).rejects.toThrow(/taskId/);
    await expect(hosted.put({ ...base, accountId: 'acct_1', ttlSeconds: 0 })).rejects.toThrow(/ttlSeconds/);
    await expect(hosted.put({ ...base, accountId: 'acct_1', ttlSeconds: 8 * 86_400 })).rejects.toThrow(/ttlSeconds/);
  });

  it('urlFor gives a fresh link ending when the object does, never later; none for an unknown or ended object', async () => {
    const { key, expiresAt } = await hosted.put({ accountId: 'acct_2', name: 'a.wav', bytes: Buffer.from('RIFF'), contentType: 'audio/wav', now: NOW, baseUrl: BASE, ttlSeconds: 3600 });
    const later = await hosted.urlFor(key, NOW + 3000, 'http://other');
    expect(later).toMatchObject({ key, expiresAt });
    const url = new URL(later!.url);
    expect(url.origin).toBe('http://other');
    expect(url.searchParams.get('expires')).toBe(String(expiresAt));
    expect(store.verify(key, expiresAt, url.searchParams.get('signature')!, NOW + 3599)).toBe(true);
    expect(await hosted.urlFor(key, expiresAt, BASE)).toBeNull();
    expect(await hosted.urlFor(key, expiresAt + 1, BASE)).toBeNull();
    expect(await hosted.urlFor('media/acct_2/none/a.wav', NOW, BASE)).toBeNull();
  });

  it('sweep deletes expired bytes then rows, up to its limit; a store failure keeps the row for the next sweep', async () => {
    await db.sql.query('DELETE FROM hosted_objects');
    const at = NOW + 1_000_000;
    const put = (name: string, ttlSeconds: number) => hosted.put({ accountId: 'acct_3', name, bytes: Buffer.from(name), contentType: 'audio/mpeg', now: at, baseUrl: BASE, ttlSeconds });
    const expired = await Promise.all(['a', 'b', 'c', 'd'].map((n) => put(`${n}.mp3`, 10)));
    const live = await put('live.mp3', 1000);
    store.failing.add(expired[3]!.key);
    expect(await hosted.sweep(at + 10)).toBe(0); // expires_at is the last second a link works
    expect(await hosted.sweep(at + 11, 2)).toBe(2);
    expect(await hosted.sweep(at + 11)).toBe(1);
    // Tried by each sweep that selected it (the order among equal expiries is the database's).
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(new Set(failures)).toEqual(new Set([expired[3]!.key]));
    for (const { key } of expired.slice(0, 3)) {
      expect(await store.get(key)).toBeNull();
      expect(await row(key)).toBeUndefined();
    }
    expect(await row(expired[3]!.key)).toBeDefined();
    expect(await store.get(live.key)).not.toBeNull();
    store.failing.clear();
    expect(await hosted.sweep(at + 11)).toBe(1);
    expect(await row(expired[3]!.key)).toBeUndefined();
    expect(await store.get(expired[3]!.key)).toBeNull();
    expect(await hosted.sweep(at + 11)).toBe(0);
    expect(await row(live.key)).toBeDefined();
  });

  it('a sweep of more than a page of rows goes on until nothing expired is left', async () => {
    await db.sql.query('DELETE FROM hosted_objects');
    const at = NOW + 2_000_000;
    const values = Array.from({ length: 1203 }, (_, i) => `('media/acct_4/k${i}/x.mp3', 'acct_4', 'audio/mpeg', 1, ${at}, ${at + 1})`);
    await db.sql.query(`INSERT INTO hosted_objects (key, account_id, content_type, size, created_at, expires_at) VALUES ${values.join(',')}`);
    expect(await hosted.sweep(at + 2)).toBe(1203);
    expect(await db.sql.query('SELECT 1 FROM hosted_objects')).toEqual([]);
  });
});

describe('hostedStoreOf', () => {
  it('the S3 bucket when knowledge files go to S3; else a local store of its own under DATA_DIR/media with the media route', async () => {
    const s3: ObjectStore = new S3ObjectStore({ endpoint: 'http://s3', bucket: 'b', region: 'auto', accessKeyId: 'a', secretAccessKey: 's' });
    expect(hostedStoreOf(s3, '/data', 'secret')).toBe(s3);
    const local = hostedStoreOf(new LocalObjectStore('/data/objects', 'secret'), '/data', 'secret');
    expect(local).toBeInstanceOf(LocalObjectStore);
    expect((local as LocalObjectStore).downloadPrefix).toBe('/v1/media/files/');
    // Signed with a key of its own: a wiki link's signature does not open a media key.
    const wiki = new LocalObjectStore('/data/objects', 'secret');
    const signature = new URL(await wiki.signedUrl('media/a/b/c.mp3', 60, { baseUrl: BASE, now: NOW })).searchParams.get('signature')!;
    expect((local as LocalObjectStore).verify('media/a/b/c.mp3', NOW + 60, signature, NOW)).toBe(false);
  });
});
