import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BodyTooLargeError, textWithin } from './bounded-body';
import { statusFailure } from './upstream-call';

/** A body of `chunks` chunks of `size` bytes that counts how many were pulled from it. */
function body(chunks: number, size: number) {
  let pulled = 0;
  const stream = Readable.from(
    (function* () {
      for (let i = 0; i < chunks; i++) {
        pulled++;
        yield Buffer.alloc(size, 'a');
      }
    })(),
  );
  return { stream, pulled: () => pulled };
}

describe('upstream bodies read whole, within a bound', () => {
  it('reads a body within its bound', async () => {
    expect(await textWithin(body(4, 10).stream, 40)).toBe('a'.repeat(40));
  });

  it('refuses a body past its bound without reading the rest', async () => {
    const b = body(1000, 1024);
    await expect(textWithin(b.stream, 10 * 1024)).rejects.toBeInstanceOf(BodyTooLargeError);
    expect(b.pulled()).toBeLessThan(20);
    expect(b.stream.destroyed).toBe(true);
  });

  it('keeps the first bytes of an error body when asked to truncate', async () => {
    expect(await textWithin(body(1000, 1024).stream, 100, { truncate: true })).toBe('a'.repeat(100));
  });

  it('an upstream error status keeps at most a mebibyte of its body', async () => {
    const failure = await statusFailure(500, { 'retry-after': '3' }, body(4096, 1024).stream);
    expect(failure).toMatchObject({ kind: 'status', status: 500, headers: { 'retry-after': '3' } });
    expect((failure as { body: string }).body.length).toBe(1024 * 1024);
  });
});
