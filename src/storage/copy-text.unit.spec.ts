import { describe, expect, it } from 'vitest';
import { copyLine, copyTextArray, copyValue } from './copy-text';

describe('COPY text format', () => {
  it('writes null as \\N and escapes what would end a value or a row', () => {
    expect(copyValue(null)).toBe('\\N');
    expect(copyValue(undefined)).toBe('\\N');
    expect(copyValue('a\tb\nc\rd\\e')).toBe('a\\tb\\nc\\rd\\\\e');
    expect(copyValue('\\N')).toBe('\\\\N');
    expect(copyValue(12n)).toBe('12');
    expect(copyLine(['x', null, 3])).toBe('x\t\\N\t3\n');
  });

  it('quotes each element of a text array; the line escapes the literal', () => {
    expect(copyTextArray([])).toBe('{}');
    const literal = copyTextArray(['a,b', 'say "hi"', 'back\\slash', 'NULL']);
    expect(literal).toBe('{"a,b","say \\"hi\\"","back\\\\slash","NULL"}');
    expect(copyLine([literal])).toBe('{"a,b","say \\\\"hi\\\\"","back\\\\\\\\slash","NULL"}\n');
  });
});
