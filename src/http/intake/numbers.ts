import { z } from 'zod';

/**
 * Numbers in query parameters, as zod schemas of the query text: a route declares them in its
 * `config.openapi.query` (the openapi plugin enforces it and hands the handler the numbers).
 * Absent or empty is the route's default (`undefined`).
 */

/** Postgres' bigint, and an event revision's range. */
const INT64_MAX = 9_223_372_036_854_775_807n;

/** Digits only: no sign, no exponent, no spaces (Number() would take `1e3` and ` 7`); empty is absent. */
const DIGITS = /^\d{0,30}$/;

const UNIX_SECONDS = `must be Unix seconds: a whole number from 0 to ${Number.MAX_SAFE_INTEGER}`;
const REVISION = `must be a whole number from 0 to ${INT64_MAX}`;

const digits = (message: string) => z.string().regex(DIGITS, message);

/** A time in Unix seconds: a whole number the gateway can compute with exactly (at most 2^53 − 1),
 * so never past a bigint column either. */
export const UnixSecondsQuery = digits(UNIX_SECONDS)
  .transform((text) => (text === '' ? undefined : Number(text)))
  .refine((n) => n === undefined || Number.isSafeInteger(n), UNIX_SECONDS)
  .optional();

/** A position in a stream (a revision). */
export const RevisionQuery = digits(REVISION)
  .transform((text) => (text === '' ? undefined : BigInt(text)))
  .refine((n) => n === undefined || n <= INT64_MAX, REVISION)
  .optional();

/** A whole number of at least `min`; above `max` it is `max` (a page size). */
export function countQuery(min: number, max?: number) {
  const message = `must be an integer ≥ ${min}`;
  return digits(message)
    .transform((text) => (text === '' ? undefined : Number(text)))
    .refine((n) => n === undefined || (Number.isSafeInteger(n) && n >= min), message)
    .transform((n) => (n !== undefined && max !== undefined ? Math.min(n, max) : n))
    .optional();
}

/** A list's page size: `fallback` when absent or not a number, within 1..max (lenient: an admin list). */
export const pageSizeQuery = (fallback: number, max: number) =>
  z
    .string()
    .optional()
    .transform((value) => Math.min(Math.max(Number(value ?? fallback) || fallback, 1), max))
    .describe(`Page size, 1-${max} (default ${fallback}; other text is the default).`);
