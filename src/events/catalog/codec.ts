import { z } from 'zod';

/** Money in events: written as a decimal string of nano-dollars, read back as bigint. */
export const Units = z
  .union([z.bigint(), z.string().regex(/^-?\d+$/)])
  .transform((v) => BigInt(v));

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
