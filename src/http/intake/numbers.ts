import { GatewayError } from '../errors';

/** Postgres' bigint, and an event revision's range. */
const INT64_MAX = 9_223_372_036_854_775_807n;

/** Digits only: no sign, no exponent, no spaces (Number() would take `1e3` and ` 7`). */
const DIGITS = /^\d{1,30}$/;

/** A query parameter in Unix seconds, or the fallback when absent: a whole number the gateway can
 * compute with exactly (at most 2^53 − 1), so never past a bigint column either. */
export function unixSecondsParam(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = typeof value === 'string' && DIGITS.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new GatewayError('invalid_request', `${name} must be Unix seconds: a whole number from 0 to ${Number.MAX_SAFE_INTEGER}`);
  return n;
}

/** A query parameter that is a position in a stream (a revision), or the fallback when absent. */
export function revisionParam(value: unknown, name: string, fallback: bigint): bigint {
  if (value === undefined || value === '') return fallback;
  const n = typeof value === 'string' && DIGITS.test(value) ? BigInt(value) : -1n;
  if (n < 0n || n > INT64_MAX) throw new GatewayError('invalid_request', `${name} must be a whole number from 0 to ${INT64_MAX}`);
  return n;
}
