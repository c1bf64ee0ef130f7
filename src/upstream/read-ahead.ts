import type { Readable } from 'node:stream';

/** Bytes kept before the body is paused (TCP then slows the upstream down); reading resumes
 * below half of it. The reader's own pace (the client's back-pressure) sets how fast it empties. */
export const READ_AHEAD_BYTES = 1024 * 1024;

/**
 * Reads a response body from now on and keeps what arrives, and how the body ended, until it is
 * iterated. A socket error destroys an undici body and, with it, whatever the body had buffered
 * and nobody had read yet: a stream cut by the upstream while the gateway waits (for a hold's
 * commit) would otherwise lose the frames that arrived before the cut.
 */
export function readAhead(body: Readable): AsyncIterable<Buffer> {
  const chunks: Buffer[] = [];
  let buffered = 0;
  let ended = false;
  let failure: unknown = null;
  let wake: (() => void) | null = null;
  const notify = () => {
    const waiting = wake;
    wake = null;
    waiting?.();
  };
  body.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    buffered += chunk.length;
    if (buffered >= READ_AHEAD_BYTES) body.pause();
    notify();
  });
  body.once('end', () => {
    ended = true;
    notify();
  });
  body.once('error', (error) => {
    failure = error;
    notify();
  });
  body.once('close', () => {
    if (!ended && failure === null) failure = new Error('the upstream body closed before its end');
    notify();
  });
  return {
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          const chunk = chunks.shift();
          if (chunk !== undefined) {
            buffered -= chunk.length;
            if (body.isPaused() && buffered < READ_AHEAD_BYTES / 2) body.resume();
            yield chunk;
          } else if (failure !== null) throw failure;
          else if (ended) return;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        if (!ended) body.destroy();
      }
    },
  };
}
