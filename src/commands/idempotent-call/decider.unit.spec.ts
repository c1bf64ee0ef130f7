import { describe, expect, it } from 'vitest';
import type { IdempotentCallEvent } from '../../events/catalog';
import { givenWhenThen } from '../../../test/support/decider';
import { digestOfHold, idempotencyDigest, idempotentCallDecider, idempotentHoldId, type IdempotentCallCommand } from './decider';

const NOW = 1_700_000_000;
const WEEK = 7 * 24 * 3600;
const DIGEST = idempotencyDigest('acct_1', 'intent-1');
const { given } = givenWhenThen(idempotentCallDecider);

const start = (fingerprint = 'fp-a', now = NOW, requestId = 'req_2'): IdempotentCallCommand => ({
  type: 'Start',
  accountId: 'acct_1',
  digest: DIGEST,
  fingerprint,
  requestId,
  retentionSeconds: WEEK,
  now,
});
const started = (run: number, fingerprint = 'fp-a', at = NOW, requestId = 'req_1'): IdempotentCallEvent => ({
  type: 'IdempotentCallStarted',
  data: { account_id: 'acct_1', hold_id: idempotentHoldId(DIGEST, run), fingerprint, request_id: requestId, at },
});
const released = (run: number, at = NOW): IdempotentCallEvent => ({ type: 'IdempotentCallReleased', data: { hold_id: idempotentHoldId(DIGEST, run), at } });

describe('idempotent call decider', () => {
  it('derives the digest from account and key, and reads it back from the hold id', () => {
    expect(DIGEST).toMatch(/^[0-9a-f]{32}$/);
    expect(idempotencyDigest('acct_2', 'intent-1')).not.toBe(DIGEST);
    expect(idempotencyDigest('acct_1', 'intent-2')).not.toBe(DIGEST);
    expect(digestOfHold(idempotentHoldId(DIGEST, 3))).toBe(DIGEST);
    expect(digestOfHold('req_0123456789abcdef0123456789abcdef')).toBeNull();
  });

  it('starts run 0 for a key never used, with its hold id and fingerprint', () => {
    const state = given([]).when(start('fp-a', NOW, 'req_1')).then([started(0)]);
    expect(state.last).toMatchObject({ holdId: idempotentHoldId(DIGEST, 0), fingerprint: 'fp-a', released: false });
  });

  it('gives the same run again (no event) for the same request within retention: its hold decides', () => {
    const state = given([started(0)]).when(start('fp-a', NOW + WEEK - 1)).then([]);
    expect(state.last!.holdId).toBe(idempotentHoldId(DIGEST, 0));
    expect(state.last!.requestId).toBe('req_1');
  });

  it('refuses another request under a run that counts', () => {
    given([started(0)]).when(start('fp-b', NOW + 60)).thenRefused('idempotency_key_reuse');
  });

  it('starts a new run, with a new hold id, once the last was released, whatever the body', () => {
    given([started(0), released(0)]).when(start('fp-b', NOW + 60, 'req_2')).then([started(1, 'fp-b', NOW + 60, 'req_2')]);
  });

  it('starts a new run once the last is past retention, released or not', () => {
    given([started(0)]).when(start('fp-b', NOW + WEEK, 'req_2')).then([started(1, 'fp-b', NOW + WEEK, 'req_2')]);
  });

  it('records a release of the current run once; a release of another run changes nothing', () => {
    given([started(0)]).when({ type: 'Release', holdId: idempotentHoldId(DIGEST, 0), now: NOW }).then([released(0)]);
    given([started(0), released(0)]).when({ type: 'Release', holdId: idempotentHoldId(DIGEST, 0), now: NOW }).then([]);
    given([started(0), released(0), started(1)]).when({ type: 'Release', holdId: idempotentHoldId(DIGEST, 0), now: NOW }).then([]);
    given([]).when({ type: 'Release', holdId: idempotentHoldId(DIGEST, 0), now: NOW }).then([]);
  });
});
