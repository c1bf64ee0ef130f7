import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Failure } from '../upstream/upstream-call';
import { failover, mayHaveBeenAccepted } from './failover';

const running = { expired: false, shuttingDown: false, aborted: false };
const status = (s: number): Failure => ({ kind: 'status', status: s, body: '{}', headers: {} });

describe('failover: the one decision of every ladder', () => {
  it('5xx, refused connections and time-outs try the next channel and count against the channel', () => {
    for (const failure of [status(500), status(503), { kind: 'unreachable', message: 'ECONNREFUSED' }, { kind: 'timeout', message: 'late' }] as Failure[]) {
      const verdict = failover(failure, running, 12);
      expect(verdict.next).toBe(true);
      expect(verdict.outcome?.kind).toBe('failure');
      expect(verdict.failure).toBe(failure);
    }
  });

  it('a 401/403 is the channel key: next channel, channel disabled, and the client would get no_channel_available', () => {
    for (const s of [401, 403]) {
      const verdict = failover(status(s), running);
      expect(verdict).toMatchObject({ next: true, outcome: { kind: 'credentials' }, failure: { kind: 'no_channel' } });
    }
  });

  it('other 4xx are the caller\'s: the ladder ends with them passed through; a 429 counts against the channel', () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 499 }).filter((s) => s !== 401 && s !== 403), (s) => {
        const verdict = failover(status(s), running);
        expect(verdict.next).toBe(false);
        expect(verdict.failure).toEqual(status(s));
        expect(verdict.outcome?.kind).toBe(s === 429 ? 'failure' : 'success');
      }),
    );
  });

  it('the call\'s budget, the shutdown and the client leaving end the ladder or say nothing of the channel', () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 599 }), fc.boolean(), fc.boolean(), (s, expired, shuttingDown) => {
        fc.pre(expired || shuttingDown);
        expect(failover(status(s), { expired, shuttingDown, aborted: true }).next).toBe(false);
      }),
    );
    expect(failover({ kind: 'shutdown', message: 'bye' }, running)).toMatchObject({ next: false, outcome: null });
    expect(failover({ kind: 'unreachable', message: 'aborted' }, { expired: false, shuttingDown: false, aborted: true }).outcome).toBeNull();
  });
});

describe('a paid generation is sent upstream once', () => {
  it('is not resent after a time-out (the upstream may be generating it), and is after a refusal or a 5xx', () => {
    expect(mayHaveBeenAccepted({ kind: 'timeout', message: 'the upstream did not answer in time' })).toBe(true);
    expect(mayHaveBeenAccepted({ kind: 'unreachable', message: 'upstream connection failed (ECONNREFUSED)' })).toBe(false);
    expect(mayHaveBeenAccepted({ kind: 'status', status: 503, body: '', headers: {} })).toBe(false);
  });
});
