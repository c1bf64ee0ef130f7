/**
 * Money is a bigint count of nano-dollars (1 unit = 10^-9 USD): a $0.15 per 1M
 * tokens price is then exactly 150 units per 1000 tokens. Decimal strings are
 * converted here, once, at the edges; nothing on a money path uses floats.
 */
export const UNITS_PER_USD = 1_000_000_000n;
const SCALE = 9;

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

export class InvalidAmountError extends Error {
  constructor(readonly input: string, reason: string) {
    super(`invalid USD amount "${input}": ${reason}`);
    this.name = 'InvalidAmountError';
  }
}

/** "134.80" -> 134_800_000_000n. Refuses more than 9 fractional digits instead of rounding. */
export function parseUsd(input: string): bigint {
  const match = DECIMAL.exec(input.trim());
  if (!match) throw new InvalidAmountError(input, 'expected a decimal number such as "134.80"');
  const [, sign, whole, fraction = ''] = match;
  if (fraction.length > SCALE) throw new InvalidAmountError(input, `at most ${SCALE} decimal places`);
  const units = BigInt(whole!) * UNITS_PER_USD + BigInt(fraction.padEnd(SCALE, '0'));
  return sign ? -units : units;
}

/** 40_440_000_000n -> "40.44": exact, at least two decimals, trailing zeros trimmed past that. */
export function formatUsd(units: bigint): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / UNITS_PER_USD;
  let fraction = (abs % UNITS_PER_USD).toString().padStart(SCALE, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${fraction}`;
}

/** For the endpoints whose contract is a JSON number; the only float conversion, at the edge. */
export function usdNumber(units: bigint): number {
  return Number(formatUsd(units));
}

/** ceil(a / b) for a >= 0, b > 0. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  if (a <= 0n) return a / b;
  return (a + b - 1n) / b;
}

export const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);
export const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
