/**
 * What a claim on an idempotency key means, given what is stored under it. Pure: no I/O,
 * no clock (`now` is an argument, in Unix seconds like the rest of the gateway). The store
 * reads the row, asks here, and applies the answer atomically.
 */

export interface IdempotencyPolicy {
  /** How long an unfinished claim keeps the key (spec: up to 10 minutes). */
  readonly leaseSeconds: number;
  /** How long a key is remembered at all (spec: 7 days). */
  readonly retentionSeconds: number;
}

export const DEFAULT_POLICY: IdempotencyPolicy = { leaseSeconds: 10 * 60, retentionSeconds: 7 * 24 * 60 * 60 };

/** What is stored under (account, key). The response bytes are not part of it: they are
 * only read when the answer is a replay. */
export type KeyRecord =
  | { readonly state: 'in_flight'; readonly fingerprint: string; readonly createdAt: number; readonly leaseUntil: number }
  | { readonly state: 'succeeded'; readonly fingerprint: string; readonly createdAt: number }
  /** Succeeded (and was billed) but the response was too large to keep. */
  | { readonly state: 'not_cached'; readonly fingerprint: string; readonly createdAt: number };

/** The refusals, named as the spec's error codes. */
export type IdempotencyRefusal = 'idempotency_key_reuse' | 'idempotency_in_flight' | 'idempotency_response_not_cached';

export type ClaimDecision =
  /** Nothing stored: claim the key and run. */
  | { readonly kind: 'proceed' }
  /** Something stored that no longer counts: replace it with a new claim and run. */
  | { readonly kind: 'take_over'; readonly reason: 'retention_passed' | 'lease_expired' }
  /** The same request succeeded before: send its response again, run nothing. */
  | { readonly kind: 'replay' }
  | { readonly kind: 'refuse'; readonly code: IdempotencyRefusal };

export function decideClaim(
  record: KeyRecord | null,
  fingerprint: string,
  now: number,
  policy: IdempotencyPolicy = DEFAULT_POLICY,
): ClaimDecision {
  if (record === null) return { kind: 'proceed' };
  // Past retention the key counts as new, whatever it held and whatever the body is.
  if (record.createdAt + policy.retentionSeconds <= now) return { kind: 'take_over', reason: 'retention_passed' };
  // An abandoned claim (client or instance gone) frees the key once its lease ends; the
  // new request may carry any body, since nothing was remembered for the old one.
  if (record.state === 'in_flight' && record.leaseUntil <= now) return { kind: 'take_over', reason: 'lease_expired' };
  // A different body is the client's mistake whatever the state: say so before "wait".
  if (record.fingerprint !== fingerprint) return { kind: 'refuse', code: 'idempotency_key_reuse' };
  switch (record.state) {
    case 'in_flight':
      return { kind: 'refuse', code: 'idempotency_in_flight' };
    case 'succeeded':
      return { kind: 'replay' };
    case 'not_cached':
      return { kind: 'refuse', code: 'idempotency_response_not_cached' };
  }
}
