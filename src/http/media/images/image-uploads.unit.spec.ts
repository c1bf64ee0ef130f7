import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SpooledUploads, STALE_UPLOAD_MS, sweepStaleUploads } from './image-uploads';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'uploads-unit-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const log = pino({ level: 'silent' });
const part = (chunks: Buffer[], filename = 'a.png') => ({ fieldname: 'image', filename, mimetype: 'image/png', file: Readable.from(chunks) });
const files = () => readdirSync(root);
const gone = () => vi.waitFor(() => expect(files()).toEqual([]), { timeout: 2_000, interval: 10 });

describe('SpooledUploads', () => {
  it('writes a part to disk as it arrives and gives it back as a Blob with its digest', async () => {
    const spool = new SpooledUploads(root, log);
    const letGo = spool.hold()!;
    const chunks = [Buffer.from('first '), Buffer.from('second')];
    const counted: number[] = [];
    const file = await spool.take(part(chunks), (bytes) => counted.push(bytes));
    expect(counted).toEqual([6, 6]);
    expect(file).toMatchObject({ field: 'image', filename: 'a.png', mimetype: 'image/png', sha256: createHash('sha256').update('first second').digest('hex') });
    expect(Buffer.from(await file.data.arrayBuffer()).toString()).toBe('first second');
    expect(file.data.type).toBe('image/png');
    expect(files()).toHaveLength(1);
    letGo();
    await gone();
  });

  it('keeps the files while any hold is left, deletes them with the last, and takes no new hold after', async () => {
    const spool = new SpooledUploads(root, log);
    const request = spool.hold()!;
    await spool.take(part([Buffer.from('x')]), () => {});
    const call = spool.hold()!;
    request();
    request(); // letting go twice counts once
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(files()).toHaveLength(1);
    call();
    await gone();
    expect(spool.hold()).toBeNull();
    await expect(spool.take(part([Buffer.from('y')]), () => {})).rejects.toThrow(/gone/);
  });

  it('a refusal from the count stops the write, and the part written so far is deleted with the hold', async () => {
    const spool = new SpooledUploads(root, log);
    const letGo = spool.hold()!;
    let size = 0;
    const refuse = (bytes: number) => {
      size += bytes;
      if (size > 10) throw new Error('over the limit');
    };
    await expect(spool.take(part([Buffer.alloc(8), Buffer.alloc(8), Buffer.alloc(8)]), refuse)).rejects.toThrow('over the limit');
    letGo();
    await gone();
  });
});

describe('sweepStaleUploads', () => {
  it('deletes uploads older than any live request, and leaves younger ones and other files alone', async () => {
    const now = Date.now();
    const old = (now - STALE_UPLOAD_MS - 60_000) / 1000;
    for (const name of ['left.upload', 'young.upload', 'other.txt']) writeFileSync(join(root, name), 'x');
    utimesSync(join(root, 'left.upload'), old, old);
    utimesSync(join(root, 'other.txt'), old, old);
    expect(await sweepStaleUploads(root, now)).toBe(1);
    expect(files().sort()).toEqual(['other.txt', 'young.upload']);
    expect(await sweepStaleUploads(join(root, 'missing'), now)).toBe(0);
  });
});
