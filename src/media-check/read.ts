/**
 * The first bytes of a body, never more than a bound: a server that ignores the Range header sends the
 * whole file, and one that trickles must not hold the probe past its deadline (the request's signal ends
 * the read; what arrived until then is kept). Reading also stops as soon as the bytes hold what the
 * format needs (`enough`), asked at doubling sizes so that a large read is not re-examined per chunk.
 */

export interface Prefix {
  readonly bytes: Buffer;
  /** The body ended within the bound: these are all its bytes. */
  readonly ended: boolean;
  /** Why reading stopped early (the deadline, a broken connection), if it did. */
  readonly interrupted: string | null;
}

interface Body extends AsyncIterable<unknown> {
  destroy(error?: Error): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** A body no longer wanted, dropped unread: undici reports the drop as an error event, which with no
 * listener would be an uncaught exception. */
export function discard(body: Body): void {
  body.on('error', () => {});
  body.destroy();
}

const FIRST_LOOK = 4096;

export async function readPrefix(body: Body, maxBytes: number, enough: (bytes: Buffer) => boolean): Promise<Prefix> {
  const chunks: Buffer[] = [];
  let size = 0;
  let nextLook = FIRST_LOOK;
  const bytes = () => Buffer.concat(chunks, size);
  try {
    for await (const chunk of body) {
      const piece = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      const room = maxBytes - size;
      chunks.push(piece.length > room ? piece.subarray(0, room) : piece);
      size += Math.min(piece.length, room);
      if (size >= maxBytes) {
        discard(body);
        return { bytes: bytes(), ended: false, interrupted: null };
      }
      if (size >= nextLook) {
        while (nextLook <= size) nextLook *= 2;
        const sofar = bytes();
        if (enough(sofar)) {
          discard(body);
          return { bytes: sofar, ended: false, interrupted: null };
        }
      }
    }
    return { bytes: bytes(), ended: true, interrupted: null };
  } catch (error) {
    discard(body);
    const e = error as { name?: string; code?: string; message?: string };
    const why = e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED' ? 'the time limit' : `a read error (${e.code ?? e.message ?? 'unknown'})`;
    return { bytes: bytes(), ended: false, interrupted: why };
  }
}
