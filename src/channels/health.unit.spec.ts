import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AttemptOutcome } from './failover';
import { FRESH_STATE, isUsable, nextState, operatorState, type ChannelState, type HealthPolicy } from './health';

const policy: HealthPolicy = { failuresBeforeCooldown: 3, cooldownMs: 1000, maxCooldownMs: 8000 };
const fail: AttemptOutcome = { kind: 'failure', message: 'upstream answered 500', latencyMs: 5 };
const ok: AttemptOutcome = { kind: 'success', latencyMs: 7 };
const refused: AttemptOutcome = { kind: 'credentials', message: 'upstream answered 401' };

function run(outcomes: readonly AttemptOutcome[], start: ChannelState = FRESH_STATE, now = 0, probe = false): ChannelState {
  return outcomes.reduce((state, outcome) => nextState(state, outcome, now, policy, probe).state, start);
}

describe('channel health state', () => {
  it('cools down after the configured failures in a row, with a doubling cooldown capped at the maximum', () => {
    expect(run([fail, fail]).status).toBe('healthy');
    const cooling = run([fail, fail, fail]);
    expect(cooling).toMatchObject({ status: 'cooling', coolingUntil: 1000, cooldowns: 1 });
    expect(isUsable(cooling, 999)).toBe(false);
    expect(isUsable(cooling, 1000)).toBe(true);
    // On trial past its cooldown, one failure cools it again for twice as long.
    const again = nextState(cooling, fail, 1000, policy);
    expect(again.state.coolingUntil).toBe(3000);
    expect(again.change).toMatchObject({ from: 'cooling', to: 'cooling', cause: 'failures' });
    let state = again.state;
    for (let i = 0; i < 10; i++) state = nextState(state, fail, 0, policy).state;
    expect(state.coolingUntil).toBe(8000);
  });

  it('a success makes it healthy and forgets the backoff', () => {
    const healed = nextState(run([fail, fail, fail]), ok, 2000, policy);
    expect(healed.state).toMatchObject({ status: 'healthy', failuresInRow: 0, cooldowns: 0, coolingUntil: null, latencyMs: 7 });
    expect(healed.change).toMatchObject({ from: 'cooling', to: 'healthy', cause: 'success' });
  });

  it('a refusal of the credentials disables it until a probe succeeds or an operator enables it', () => {
    const disabled = nextState(FRESH_STATE, refused, 0, policy);
    expect(disabled.state).toMatchObject({ status: 'disabled', disabledBy: 'credentials' });
    expect(disabled.change).toMatchObject({ to: 'disabled', cause: 'credentials' });
    expect(isUsable(disabled.state, 1e12)).toBe(false);
    expect(run([ok], disabled.state).status).toBe('disabled');
    expect(nextState(disabled.state, ok, 0, policy, true).change).toMatchObject({ to: 'healthy', cause: 'probe' });
    expect(operatorState(disabled.state, 'enable').state.status).toBe('healthy');
  });

  it('an operator\'s disable holds whatever attempts or probes say', () => {
    const off = operatorState(FRESH_STATE, 'disable').state;
    fc.assert(
      fc.property(fc.array(fc.constantFrom(ok, fail, refused)), fc.boolean(), (outcomes, probe) => {
        expect(run(outcomes, off, 0, probe)).toMatchObject({ status: 'disabled', disabledBy: 'operator' });
      }),
    );
  });

  it('never cools for longer than the maximum, and a cooling channel always has an end', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(ok, fail, refused), { maxLength: 40 }), fc.nat(10_000), (outcomes, now) => {
        const state = run(outcomes, FRESH_STATE, now);
        if (state.status === 'cooling') expect(state.coolingUntil! - now).toBeLessThanOrEqual(policy.maxCooldownMs);
        else expect(state.coolingUntil).toBeNull();
      }),
    );
  });
});
