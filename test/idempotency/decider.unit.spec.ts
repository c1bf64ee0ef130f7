import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, decideClaim, type ClaimDecision, type KeyRecord } from '../../src/idempotency/decider';

const T0 = 1_800_000_000;
const LEASE = DEFAULT_POLICY.leaseSeconds;
const RETENTION = DEFAULT_POLICY.retentionSeconds;
const SAME = 'f'.repeat(64);
const OTHER = 'e'.repeat(64);

const inFlight: KeyRecord = { state: 'in_flight', fingerprint: SAME, createdAt: T0, leaseUntil: T0 + LEASE };
const succeeded: KeyRecord = { state: 'succeeded', fingerprint: SAME, createdAt: T0 };
const notCached: KeyRecord = { state: 'not_cached', fingerprint: SAME, createdAt: T0 };

/** given(stored).when(fingerprint, at).then(decision) */
const given = (record: KeyRecord | null) => ({
  when: (fingerprint: string, at: number) => ({
    then: (expected: ClaimDecision) => expect(decideClaim(record, fingerprint, at)).toEqual(expected),
  }),
});

describe('claim decider', () => {
  it('nothing stored: proceed', () => given(null).when(SAME, T0).then({ kind: 'proceed' }));

  describe('a request still running', () => {
    it('same body: 409 in flight', () => given(inFlight).when(SAME, T0 + 1).then({ kind: 'refuse', code: 'idempotency_in_flight' }));
    it('different body: 409 reuse (the client error comes first)', () =>
      given(inFlight).when(OTHER, T0 + 1).then({ kind: 'refuse', code: 'idempotency_key_reuse' }));
    it('still held one second before the lease ends', () =>
      given(inFlight).when(SAME, T0 + LEASE - 1).then({ kind: 'refuse', code: 'idempotency_in_flight' }));
    it('lease over (abandoned): taken over, any body', () => {
      given(inFlight).when(SAME, T0 + LEASE).then({ kind: 'take_over', reason: 'lease_expired' });
      given(inFlight).when(OTHER, T0 + LEASE).then({ kind: 'take_over', reason: 'lease_expired' });
    });
  });

  describe('a remembered success', () => {
    it('same body: replay', () => given(succeeded).when(SAME, T0 + LEASE * 10).then({ kind: 'replay' }));
    it('different body: 409 reuse', () => given(succeeded).when(OTHER, T0 + 1).then({ kind: 'refuse', code: 'idempotency_key_reuse' }));
    it('replayed up to the last second of retention', () => given(succeeded).when(SAME, T0 + RETENTION - 1).then({ kind: 'replay' }));
    it('past retention the key is new, whatever the body', () => {
      given(succeeded).when(SAME, T0 + RETENTION).then({ kind: 'take_over', reason: 'retention_passed' });
      given(succeeded).when(OTHER, T0 + RETENTION).then({ kind: 'take_over', reason: 'retention_passed' });
    });
  });

  describe('a success too large to keep', () => {
    it('same body: 409 not cached (never run again)', () =>
      given(notCached).when(SAME, T0 + 1).then({ kind: 'refuse', code: 'idempotency_response_not_cached' }));
    it('different body: 409 reuse', () => given(notCached).when(OTHER, T0 + 1).then({ kind: 'refuse', code: 'idempotency_key_reuse' }));
    it('past retention: new', () => given(notCached).when(SAME, T0 + RETENTION).then({ kind: 'take_over', reason: 'retention_passed' }));
  });

  it('honours a shorter policy', () => {
    const policy = { leaseSeconds: 5, retentionSeconds: 60 };
    expect(decideClaim({ ...inFlight, leaseUntil: T0 + 5 }, SAME, T0 + 5, policy)).toEqual({ kind: 'take_over', reason: 'lease_expired' });
    expect(decideClaim(succeeded, SAME, T0 + 60, policy)).toEqual({ kind: 'take_over', reason: 'retention_passed' });
  });
});
