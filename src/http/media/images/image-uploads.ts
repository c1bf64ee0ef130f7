import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { UploadedImage } from '../../../upstream/protocols/images';
import type { UploadBudget } from './upload-budget';

// The file parts of a multipart image edit, written to disk as they arrive and sent upstream from there:
// a 95 MB upload costs the gateway a few chunks of memory, not 95 MB of heap per request (issue 31,
// item 4: what one request carries must never change what other tenants get).

/** One file part as the multipart reader hands it over: its bytes still arriving. */
export interface FilePart {
  readonly fieldname: string;
  readonly filename: string;
  readonly mimetype: string;
  readonly file: Readable;
}

/** A file on disk: what the upstream is sent, and its SHA-256 (the Idempotency-Key fingerprint's). */
export interface SpooledFile extends UploadedImage {
  readonly sha256: string;
}

/**
 * The files of one request, on disk under `root`, deleted once the last hold on them is let go. The
 * request holds them until its answer is over (or its connection gone); a call that sends them upstream
 * takes its own hold, since a ladder (or an async task) may still read them after that. Deleting waits
 * for a file being written, so none is created after the others are gone.
 */
export class SpooledUploads {
  private readonly paths: string[] = [];
  private holders = 0;
  /** Every hold was let go: the files are deleted, and no new one is taken. */
  private gone = false;
  /** The file being written, settled (never rejects). */
  private writing: Promise<void> = Promise.resolve();
  /** Bytes of the spool's budget these files took, given back once they are deleted. */
  private reserved = 0;

  constructor(
    private readonly root: string,
    private readonly log: FastifyBaseLogger,
    /** The spool's disk budget and the account it is counted against (upload-budget.ts); null: none. */
    private readonly quota: { readonly budget: UploadBudget; readonly account: string } | null = null,
  ) {}

  /** A hold on the files: call what it returns to let go (once; again is a no-op). Null when they are gone. */
  hold(): (() => void) | null {
    if (this.gone) return null;
    this.holders += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holders -= 1;
      if (this.holders > 0) return;
      this.gone = true;
      void this.remove();
    };
  }

  /**
   * Writes one file part to disk as it arrives. `count` is told each chunk's size before it is written
   * and throws to refuse the body (the limit is on the whole body); then the chunk is taken from the
   * spool's disk budget, which refuses it with a 503 when the spool is full. Either refusal ends the read
   * at that chunk, and the part written so far is deleted with the other files. The file comes back as a Blob that reads the disk when it is sent, and its digest.
   */
  async take(part: FilePart, count: (bytes: number) => void): Promise<SpooledFile> {
    if (this.gone) throw new Error('the request is over: its uploads are gone');
    const path = join(this.root, `${randomUUID()}.upload`);
    this.paths.push(path);
    const written = this.write(path, part, count);
    this.writing = written.then(
      () => undefined,
      () => undefined,
    );
    const sha256 = await written;
    const data = await openAsBlob(path, { type: part.mimetype });
    return { field: part.fieldname, filename: part.filename, mimetype: part.mimetype, data, sha256 };
  }

  /** The file's SHA-256, once it is all on disk. */
  private async write(path: string, part: FilePart, count: (bytes: number) => void): Promise<string> {
    await mkdir(this.root, { recursive: true });
    const hash = createHash('sha256');
    const reserve = (bytes: number) => {
      if (!this.quota) return;
      const refused = this.quota.budget.reserve(this.quota.account, bytes);
      if (refused) throw refused;
      this.reserved += bytes;
    };
    await pipeline(
      part.file,
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          count(chunk.length);
          reserve(chunk.length);
          hash.update(chunk);
          yield chunk;
        }
      },
      // 'wx': a name never taken twice.
      createWriteStream(path, { flags: 'wx' }),
    );
    return hash.digest('hex');
  }

  private async remove(): Promise<void> {
    await this.writing;
    const results = await Promise.allSettled(this.paths.map((path) => rm(path, { force: true })));
    for (const result of results) if (result.status === 'rejected') this.log.warn({ err: result.reason }, 'an uploaded file could not be deleted; the sweep at the next start deletes it');
    // Given back even for a file that could not be deleted: a budget that only shrinks would end up
    // refusing every upload (the warning above tells the operator).
    this.quota?.budget.release(this.quota.account, this.reserved);
    this.reserved = 0;
  }
}

/** No live request keeps its files this long (a 300 s upload, then a 280 s ladder or async task). */
export const STALE_UPLOAD_MS = 60 * 60_000;

/**
 * Deletes what a process that stopped abruptly left in `root`: files older than any live request's.
 * Other gateways may share the directory (one DATA_DIR behind several processes), so a younger file is
 * left alone.
 */
export async function sweepStaleUploads(root: string, now = Date.now()): Promise<number> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.endsWith('.upload')) continue;
    const path = join(root, name);
    const info = await stat(path).catch(() => null);
    if (!info || now - info.mtimeMs < STALE_UPLOAD_MS) continue;
    await rm(path, { force: true });
    removed += 1;
  }
  return removed;
}
