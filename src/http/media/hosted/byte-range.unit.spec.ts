import { describe, expect, it } from 'vitest';
import { byteRange } from './byte-range';

describe('byteRange', () => {
  it('reads one bytes= range: closed, open-ended, suffix; the end is clamped to the object', () => {
    expect(byteRange('bytes=0-9', 100)).toEqual({ kind: 'slice', start: 0, end: 9 });
    expect(byteRange('bytes=90-', 100)).toEqual({ kind: 'slice', start: 90, end: 99 });
    expect(byteRange('bytes=-10', 100)).toEqual({ kind: 'slice', start: 90, end: 99 });
    expect(byteRange('bytes=-500', 100)).toEqual({ kind: 'slice', start: 0, end: 99 });
    expect(byteRange('bytes=50-5000', 100)).toEqual({ kind: 'slice', start: 50, end: 99 });
    expect(byteRange(' Bytes = 1 - 2 ', 100)).toEqual({ kind: 'slice', start: 1, end: 2 });
    expect(byteRange('bytes=99-99', 100)).toEqual({ kind: 'slice', start: 99, end: 99 });
  });

  it('a range it cannot read, or starting past the end, is unsatisfiable', () => {
    for (const header of ['bytes=100-', 'bytes=100-200', 'bytes=5-1', 'bytes=-0', 'bytes=-', 'bytes=abc', 'bytes=1-2-3', 'bytes=', 'bytes=99999999999999999999-'])
      expect(byteRange(header, 100), header).toEqual({ kind: 'unsatisfiable' });
    expect(byteRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(byteRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
  });

  it('no Range, another unit, several ranges or an If-Range: the whole object', () => {
    expect(byteRange(undefined, 100)).toEqual({ kind: 'whole' });
    expect(byteRange('items=0-1', 100)).toEqual({ kind: 'whole' });
    expect(byteRange('bytes=0-1,5-6', 100)).toEqual({ kind: 'whole' });
    expect(byteRange('bytes=0-1', 100, '"etag"')).toEqual({ kind: 'whole' });
  });
});
