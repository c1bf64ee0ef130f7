import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AttemptOutcome } from './failover';
import { FRESH_STATE, PROBE, callOf, isUsable, nextState, operatorState, type ChannelState, type HealthPolicy, type OutcomeSource } from './health';

const policy: HealthPolicy = { failuresBeforeCooldown: 3, cooldownMs: 1000, maxCooldownMs: 8000, confirmIntervalMs: 500, credentialsRetryMs: 100, maxCredentialsRetryMs: 400 };
const fail: AttemptOutcome = { kind: 'failure', message: 'upstream answered 500', latencyMs: 5 };
const ok: AttemptOutcome = { kind: 'success', latencyMs: 7 };
const refused: AttemptOutcome = { kind: 'credentials', message: 'upstream answered 401' };
const alice = callOf('alice');
const bob = callOf('bob');

/** Given a state, when these outcomes arrive (each from its source), then this state. */
function given(start: ChannelState = FRESH_STATE) {
  return {
    when: (...steps: Array<[AttemptOutcome, OutcomeSource]>) => steps.reduce((state, [outcome, source]) => nextState(state, outcome, 0, policy, source).state, start),
  };
}

describe('channel health state', () => {
  it("one account's failures never cool the channel: the run reaching the threshold asks for a probe", () => {
    const two = given().when([fail, alice], [fail, alice]);
    expect(nextState(two, fail, 0, policy, alice)).toMatchObject({ state: { status: 'healthy', failuresInRow: 3, runAccounts: ['alice'] }, change: null, probe: 'now' });
    // The gateway's own work (no account) is no second account either.
    expect(nextState(two, fail, 0, policy, callOf(null))).toMatchObject({ state: { status: 'healthy', runAccounts: ['alice'] }, probe: 'now' });
  });

  it('failures from two accounts cool it, with a doubling cooldown capped at the maximum, probed at its end', () => {
    const cooling = given().when([fail, alice], [fail, bob], [fail, alice]);
    expect(cooling).toMatchObject({ status: 'cooling', coolingUntil: 1000, probeAt: 1000, cooldowns: 1, runAccounts: [] });
    expect(isUsable(cooling, 999)).toBe(false);
    expect(isUsable(cooling, 1000)).toBe(true);
    // On trial, its probe failing cools it again for twice as long.
    const again = nextState(cooling, fail, 1000, policy, PROBE);
    expect(again.state).toMatchObject({ coolingUntil: 3000, probeAt: 3000 });
    expect(again.change).toMatchObject({ from: 'cooling', to: 'cooling', cause: 'failures', reason: expect.stringMatching(/a probe failed/) });
    let state = again.state;
    for (let i = 0; i < 10; i++) state = nextState(state, fail, 0, policy, PROBE).state;
    expect(state.coolingUntil).toBe(8000);
  });

  it("a probe's failure confirms one account's run and cools the channel; its success ends the run", () => {
    const run = given().when([fail, alice], [fail, alice], [fail, alice]);
    expect(nextState(run, fail, 0, policy, PROBE).state).toMatchObject({ status: 'cooling', coolingUntil: 1000 });
    expect(nextState(run, ok, 0, policy, PROBE)).toMatchObject({ state: { status: 'healthy', failuresInRow: 0, runAccounts: [] }, change: null });
  });

  it('on trial past its cooldown, one failure of one account asks for a probe; of a second account it cools again', () => {
    const cooling = given().when([fail, alice], [fail, bob], [fail, alice]);
    expect(nextState(cooling, fail, 1000, policy, alice)).toMatchObject({ state: { status: 'cooling', coolingUntil: 1000 }, probe: 'now' });
    const second = given(cooling).when([fail, alice], [fail, bob]);
    expect(second).toMatchObject({ status: 'cooling', coolingUntil: 2000 });
  });

  it('a success makes it healthy and forgets the backoff', () => {
    const healed = nextState(given().when([fail, alice], [fail, bob], [fail, bob]), ok, 2000, policy, alice);
    expect(healed.state).toMatchObject({ status: 'healthy', failuresInRow: 0, cooldowns: 0, coolingUntil: null, probeAt: null, latencyMs: 7 });
    expect(healed.change).toMatchObject({ from: 'cooling', to: 'healthy', cause: 'success' });
  });

  it("a call's 401/403 changes nothing but asks for a probe; a probe refused disables it, retried on a backoff", () => {
    const asked = nextState(FRESH_STATE, refused, 0, policy, alice);
    expect(asked).toMatchObject({ state: { status: 'healthy', disabledBy: null, lastError: 'upstream answered 401' }, change: null, probe: 'now' });
    const disabled = nextState(FRESH_STATE, refused, 0, policy, PROBE);
    expect(disabled.state).toMatchObject({ status: 'disabled', disabledBy: 'credentials', refusals: 1, probeAt: 100 });
    expect(disabled.change).toMatchObject({ to: 'disabled', cause: 'credentials' });
    expect(isUsable(disabled.state, 1e12)).toBe(false);
    // Retried after 100, 200, 400, 400 ms: each refusal (or failure to reach it) doubles the wait, up to the maximum.
    const waits = [refused, fail, refused, refused].reduce<{ state: ChannelState; waits: number[] }>(
      ({ state, waits }, outcome) => {
        const next = nextState(state, outcome, 0, policy, PROBE).state;
        return { state: next, waits: [...waits, next.probeAt!] };
      },
      { state: disabled.state, waits: [] },
    ).waits;
    expect(waits).toEqual([200, 400, 400, 400]);
    // A call's answer does not bring it back (it started before the disable), and asks for no probe: the retries run.
    expect(nextState(disabled.state, ok, 0, policy, alice)).toMatchObject({ state: { status: 'disabled' }, probe: null });
    expect(nextState(disabled.state, refused, 0, policy, alice).probe).toBeNull();
    expect(nextState(disabled.state, ok, 0, policy, PROBE)).toMatchObject({ state: { status: 'healthy', refusals: 0, probeAt: null }, change: { to: 'healthy', cause: 'probe' } });
    expect(operatorState(disabled.state, 'enable').state).toMatchObject({ status: 'healthy', probeAt: null });
  });

  it("an operator's disable holds whatever attempts or probes say, and is never probed", () => {
    const off = operatorState(given().when([fail, alice], [fail, bob], [fail, bob]), 'disable').state;
    expect(off.probeAt).toBeNull();
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(ok, fail, refused), fc.constantFrom(PROBE, alice, bob))), (steps) => {
        expect(given(off).when(...steps)).toMatchObject({ status: 'disabled', disabledBy: 'operator', probeAt: null });
      }),
    );
  });

  it('never cools for longer than the maximum, and a cooling channel always has an end and a probe at it', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(ok, fail, refused), fc.constantFrom(PROBE, alice, bob)), { maxLength: 40 }), fc.nat(10_000), (steps, now) => {
        const state = steps.reduce((s, [outcome, source]) => nextState(s, outcome, now, policy, source).state, FRESH_STATE);
        if (state.status === 'cooling') {
          expect(state.coolingUntil! - now).toBeLessThanOrEqual(policy.maxCooldownMs);
          expect(state.probeAt).toBe(state.coolingUntil);
        } else expect(state.coolingUntil).toBeNull();
      }),
    );
  });
});
