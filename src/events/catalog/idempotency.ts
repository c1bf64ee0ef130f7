import { z } from 'zod';
import { Timestamp, defineEvent, type EventOf } from './codec';

/**
 * The ledger's own memory of an idempotent call: `idempotent-call-{digest}`, the digest being
 * SHA-256 over the account id and the client's Idempotency-Key (the key itself is not stored).
 * It names the hold each run of the key uses, so that the wallet refuses a second hold for the
 * same run whatever happened to the `idempotency_keys` row (see src/commands/idempotent-call/).
 */
export const idempotentCallStream = (digest: string) => `idempotent-call-${digest}`;

/** A run of the key begins: its hold id (`idem_{digest}_{generation}`) and the request it is. */
export const IdempotentCallStarted = defineEvent(
  'IdempotentCallStarted',
  z.object({ account_id: z.string(), hold_id: z.string(), fingerprint: z.string(), request_id: z.string(), at: Timestamp }),
);
/** The run's hold was released, nothing billed: the key is free for another run. */
export const IdempotentCallReleased = defineEvent('IdempotentCallReleased', z.object({ hold_id: z.string(), at: Timestamp }));

export const idempotentCallEvents = [IdempotentCallStarted, IdempotentCallReleased] as const;

export type IdempotentCallEvent = EventOf<(typeof idempotentCallEvents)[number]>;
