import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChannelBoard } from './board';
import { failover, type AttemptOutcome } from './failover';
import { FRESH_STATE, PROBE, callOf, isUsable, nextState, type ChannelState, type HealthPolicy, type OutcomeSource } from './health';
import type { Failure } from '../upstream/upstream-call';

const policy: HealthPolicy = { failuresBeforeCooldown: 3, cooldownMs: 1000, maxCooldownMs: 8000, confirmIntervalMs: 500, credentialsRetryMs: 100, maxCredentialsRetryMs: 400 };
const CALL = { expired: false, shuttingDown: false, aborted: false };

/** What an upstream may answer a call: anything a request's content could provoke. */
const passiveFailure: fc.Arbitrary<Failure | 'answered'> = fc.oneof(
  fc.constant('answered' as const),
  fc.integer({ min: 400, max: 599 }).map((status): Failure => ({ kind: 'status', status, body: '', headers: {} })),
  fc.constantFrom<Failure>({ kind: 'status', status: 401, body: '', headers: {} }, { kind: 'status', status: 403, body: '', headers: {} }),
  fc.constantFrom<Failure>({ kind: 'timeout', message: 'the upstream did not answer in time' }, { kind: 'unreachable', message: 'connect ECONNREFUSED' }),
);
const outcomeOf = (answer: Failure | 'answered'): AttemptOutcome | null =>
  answer === 'answered' ? { kind: 'success', latencyMs: 3 } : failover(answer, CALL, 3).outcome;

const anyOutcome = fc.constantFrom<AttemptOutcome>({ kind: 'success', latencyMs: 1 }, { kind: 'failure', message: 'x', latencyMs: 1 }, { kind: 'credentials', message: 'x' });
const anySource = fc.constantFrom<OutcomeSource>(PROBE, callOf('a'), callOf('b'), callOf('c'), callOf(null));

describe('no account moves a channel unless a neutral probe confirms it', () => {
  it("any sequence of one account's passive outcomes, with the probes they ask for answering healthy, leaves the channel usable for everybody", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(passiveFailure, fc.nat(5_000)), { maxLength: 60 }), (steps) => {
        let now = 0;
        const board = new ChannelBoard(policy, () => now);
        // The edge: every probe asked for runs at once and the upstream answers it (the key is fine).
        board.runEffects((id, _state, probe) => {
          if (probe === 'now') board.record(id, { kind: 'success', latencyMs: 1 }, PROBE);
        });
        for (const [answer, wait] of steps) {
          now += wait;
          const outcome = outcomeOf(answer);
          if (outcome) board.record('ch', outcome, callOf('mallory'));
          const state = board.state('ch');
          expect(state.status).toBe('healthy');
          expect(isUsable(state, now)).toBe(true);
        }
      }),
    );
  });

  it("with no probe run at all, one account's (or the gateway's own) passive outcomes never change the channel's status", () => {
    fc.assert(
      fc.property(fc.array(passiveFailure, { maxLength: 60 }), fc.constantFrom('mallory', null), (answers, account) => {
        const state = answers.reduce((s, answer) => {
          const outcome = outcomeOf(answer);
          return outcome ? nextState(s, outcome, 0, policy, callOf(account)).state : s;
        }, FRESH_STATE);
        expect(state).toMatchObject({ status: 'healthy', disabledBy: null, coolingUntil: null });
      }),
    );
  });

  it('any disable for credentials is a refused probe, and any cooldown comes from a probe or from two accounts or more', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(anyOutcome, anySource), { maxLength: 80 }), (steps) => {
        let state: ChannelState = FRESH_STATE;
        for (const [outcome, source] of steps) {
          const { state: next, change } = nextState(state, outcome, 0, policy, source);
          if (next.status === 'disabled' && state.status !== 'disabled') expect([source.kind, outcome.kind]).toEqual(['probe', 'credentials']);
          if (change?.to === 'cooling' && source.kind === 'call') {
            // The run that cooled it: at least two distinct accounts since the last success.
            expect(state.runAccounts.length + (source.account !== null && !state.runAccounts.includes(source.account) ? 1 : 0)).toBeGreaterThanOrEqual(2);
          }
          state = next;
        }
      }),
    );
  });
});
