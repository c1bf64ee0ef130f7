import { z } from 'zod';

/** The largest value of a Postgres `bigint` column, where every read model keeps money. */
const BIGINT_MAX = 2n ** 63n - 1n;

/** Money in events: written as a decimal string of nano-dollars, read back as bigint. An amount
 * the read models' bigint columns cannot hold (over 9.2 billion USD) is not an event. */
export const Units = z
  .union([z.bigint(), z.string().regex(/^-?\d+$/)])
  .transform((v) => BigInt(v))
  .refine((v) => v <= BIGINT_MAX && v >= -BIGINT_MAX, 'an amount beyond the 64-bit range of the read models');

export const INT32_MAX = 2_147_483_647;

/** A count the read models keep in a Postgres `integer` column (rate limits, latencies, unit counts). */
export const Int32 = z.number().int().max(INT32_MAX);

/** The name of a channel group (`group` of a channel in the config) a key or an account is bound to. */
export const ChannelGroup = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a group name: letters, digits, `.`, `_`, `-`, at most 64');

/** Unix seconds. */
export const Timestamp = z.number().int();

export interface EventDefinition<T extends string, S extends z.ZodType> {
  readonly type: T;
  readonly version: number;
  readonly schema: S;
}

export function defineEvent<T extends string, S extends z.ZodType>(type: T, schema: S, version = 1): EventDefinition<T, S> {
  return { type, version, schema };
}

export type EventOf<D> = D extends EventDefinition<infer T, infer S> ? { type: T; data: z.output<S> } : never;
