/**
 * The decider against the spec's rules stated independently, over random records, bodies and
 * times (around the lease and retention boundaries, where mistakes live). FC_RUNS overrides
 * the number of runs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideClaim, type KeyRecord } from '../../src/idempotency/decider';

const RUNS = Number(process.env.FC_RUNS ?? 10_000);
const T0 = 1_800_000_000;

const policyArb = fc.record({ leaseSeconds: fc.integer({ min: 1, max: 3600 }), retentionSeconds: fc.integer({ min: 3600, max: 30 * 86400 }) });
const fingerprintArb = fc.constantFrom('a', 'b');

const caseArb = policyArb.chain((policy) =>
  fc.record({
    policy: fc.constant(policy),
    record: fc.option(
      fc.oneof(
        fc.record({ state: fc.constant('in_flight' as const), fingerprint: fingerprintArb, createdAt: fc.constant(T0), leaseUntil: fc.constant(T0 + policy.leaseSeconds) }),
        fc.record({ state: fc.constantFrom('succeeded' as const, 'not_cached' as const), fingerprint: fingerprintArb, createdAt: fc.constant(T0) }),
      ),
      { nil: null },
    ),
    fingerprint: fingerprintArb,
    // Offsets near 0, the lease end and the retention end, and anywhere.
    at: fc.oneof(
      fc.integer({ min: -2, max: 2 }).map((d) => T0 + policy.leaseSeconds + d),
      fc.integer({ min: -2, max: 2 }).map((d) => T0 + policy.retentionSeconds + d),
      fc.integer({ min: 0, max: 40 * 86400 }).map((d) => T0 + d),
    ),
  }),
);

describe('claim decider properties', () => {
  it('follows the spec rules for every stored state, body and time', () => {
    fc.assert(
      fc.property(caseArb, ({ policy, record, fingerprint, at }) => {
        const decision = decideClaim(record as KeyRecord | null, fingerprint, at, policy);
        const retained = record !== null && at < record.createdAt + policy.retentionSeconds;
        const running = record?.state === 'in_flight' && at < record.leaseUntil;
        const live = retained && (record!.state !== 'in_flight' || running);

        // Rule 3 and 7: a key runs again only when nothing live is stored under it.
        const runs = decision.kind === 'proceed' || decision.kind === 'take_over';
        expect(runs).toBe(!live);
        if (!live) return;
        // Rule 9: a different body is always refused as reuse.
        if (record!.fingerprint !== fingerprint) expect(decision).toEqual({ kind: 'refuse', code: 'idempotency_key_reuse' });
        // Rules 2, 5 and 9: same body.
        else if (record!.state === 'succeeded') expect(decision).toEqual({ kind: 'replay' });
        else if (record!.state === 'in_flight') expect(decision).toEqual({ kind: 'refuse', code: 'idempotency_in_flight' });
        else expect(decision).toEqual({ kind: 'refuse', code: 'idempotency_response_not_cached' });
      }),
      { numRuns: RUNS },
    );
  });

  it('a remembered success never runs twice within retention, whatever the clock does', () => {
    fc.assert(
      fc.property(policyArb, fc.integer({ min: 0, max: 40 * 86400 }), (policy, offset) => {
        const decision = decideClaim({ state: 'succeeded', fingerprint: 'a', createdAt: T0 }, 'a', T0 + offset, policy);
        expect(decision.kind).toBe(offset < policy.retentionSeconds ? 'replay' : 'take_over');
      }),
      { numRuns: RUNS },
    );
  });
});
