import { describe, expect, it } from 'vitest';
import { withinBytes } from '../../http/admin/logs';
import { clipText, CUT_MARK } from './bounds';

describe('clipText', () => {
  it('keeps a text that fits, and cuts a longer one to the limit with a mark', () => {
    expect(clipText('abc', 3)).toBe('abc');
    expect(clipText('abcdef', 4)).toBe(`abc${CUT_MARK}`);
    expect(clipText('abcdef', 4)).toHaveLength(4);
  });

  it('never leaves half of a surrogate pair', () => {
    const cut = clipText('ab\u{1F600}cdef', 4);
    expect(cut).toBe(`ab${CUT_MARK}`);
    expect(/[\ud800-\udbff]$/.test(cut.slice(0, -1))).toBe(false);
  });
});

describe('withinBytes', () => {
  it('takes items until their sizes pass the budget, and always at least one', () => {
    expect(withinBytes([3, 3, 3], 7, (n) => n)).toEqual([3, 3]);
    expect(withinBytes([3, 3, 3], 9, (n) => n)).toEqual([3, 3, 3]);
    expect(withinBytes([30, 3], 7, (n) => n)).toEqual([30]);
    expect(withinBytes([], 7, (n: number) => n)).toEqual([]);
  });
});
