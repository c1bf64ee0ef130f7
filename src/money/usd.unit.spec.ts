import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidAmountError, ceilDiv, formatUsd, parseUsd } from './usd';

describe('USD amounts', () => {
  it('parses decimal strings exactly into nano-dollars', () => {
    expect(parseUsd('40.44')).toBe(40_440_000_000n);
    expect(parseUsd('134.8')).toBe(134_800_000_000n);
    expect(parseUsd('0.000000001')).toBe(1n);
    expect(parseUsd('-1.5')).toBe(-1_500_000_000n);
    expect(() => parseUsd('0.0000000001')).toThrow(InvalidAmountError);
    expect(() => parseUsd('1e3')).toThrow(InvalidAmountError);
    expect(() => parseUsd('')).toThrow(InvalidAmountError);
  });

  it('formats with at least two decimals and no float rounding', () => {
    expect(formatUsd(40_440_000_000n)).toBe('40.44');
    expect(formatUsd(0n)).toBe('0.00');
    expect(formatUsd(1n)).toBe('0.000000001');
    expect(formatUsd(-1_250_000_000n)).toBe('-1.25');
    expect(formatUsd(123_456_789_012_345_678_901n)).toBe('123456789012.345678901');
  });

  it('round-trips every amount', () => {
    fc.assert(fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), (units) => parseUsd(formatUsd(units)) === units));
  });

  it('ceilDiv rounds up, never down', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 18n }), fc.bigInt({ min: 1n, max: 10n ** 9n }), (a, b) => {
        const q = ceilDiv(a, b);
        return q * b >= a && (q - 1n) * b < a + (a === 0n ? 1n : 0n);
      }),
    );
  });
});
