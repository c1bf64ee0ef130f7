import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Failure } from '../upstream/upstream-call';
import { fallsBack, failover, mayHaveBeenAccepted } from './failover';

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

  it("Gemini's 400 for a bad or revoked key (API_KEY_INVALID) is the channel key too, not the caller's 400", () => {
    const google = (error: Record<string, unknown>) => ({ kind: 'status', status: 400, body: JSON.stringify({ error }), headers: {} }) as const;
    const info = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } };
    const refusals: Failure[] = [
      // What Gemini sends: the ErrorInfo reason and Google's message.
      google({ code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [info] }),
      // Either one is enough.
      google({ code: 400, message: 'Request refused.', status: 'INVALID_ARGUMENT', details: [info] }),
      google({ code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' }),
      // Gemini's OpenAI-compatible endpoint: the same object in a one-element array.
      { kind: 'status', status: 400, body: JSON.stringify([{ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [info] } }]), headers: {} },
    ];
    for (const failure of refusals) {
      const verdict = failover(failure, running);
      expect(verdict).toMatchObject({ next: true, outcome: { kind: 'credentials' }, failure: { kind: 'no_channel' } });
    }
    // Other 400s stay the caller's, whatever they quote: a prompt echoed, another status, another reason, not JSON.
    const callers: Failure[] = [
      google({ code: 400, message: 'Request contains an invalid argument.', status: 'INVALID_ARGUMENT' }),
      google({ code: 400, message: 'Invalid value at contents[0] ("API key not valid")', status: 'INVALID_ARGUMENT' }),
      google({ code: 400, message: 'API key not valid', status: 'FAILED_PRECONDITION' }),
      google({ code: 400, message: 'Bad input.', status: 'INVALID_ARGUMENT', details: [{ ...info, reason: 'API_KEY_SERVICE_BLOCKED' }] }),
      { kind: 'status', status: 400, body: 'API key not valid', headers: {} },
      { kind: 'status', status: 422, body: JSON.stringify({ error: { message: 'API key not valid.', details: [info] } }), headers: {} },
    ];
    for (const failure of callers) expect(failover(failure, running)).toMatchObject({ next: false, outcome: { kind: 'success' }, failure });
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

  it('is not resent after a 2xx it could not read (the upstream accepted it); chat, which does not ask, still fails over', () => {
    const garbled: Failure = { kind: 'unreadable', message: 'the upstream answered 2xx but its answer could not be read (no task id)' };
    expect(mayHaveBeenAccepted(garbled)).toBe(true);
    // The failover rule itself: the next channel (what chat does), and one failure of the channel, as today.
    const verdict = failover(garbled, running, 7);
    expect(verdict).toEqual({ next: true, outcome: { kind: 'failure', message: garbled.message, latencyMs: 7 }, failure: garbled });
    // Chat's fallback models are tried after it, as after a failed connection.
    expect(fallsBack(garbled, running)).toBe(true);
  });
});
