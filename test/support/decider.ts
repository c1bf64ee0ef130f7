import { expect } from 'vitest';
import type { Decider } from '../../src/commands/decision';

const show = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));

/** given(events).when(command).then(events) / .thenRefused(code) for any decider: pure, no I/O, no clock. */
export function givenWhenThen<C, S, E, Code extends string>(decider: Decider<C, S, E, Code>) {
  const fold = (events: readonly E[], from: S = decider.initialState): S => events.reduce(decider.evolve, from);
  function given(events: readonly E[] = []) {
    const state = fold(events);
    return {
      state,
      when(command: C) {
        const decision = decider.decide(command, state);
        return {
          /** Asserts the exact events and returns the state they lead to. */
          then(expected: readonly E[]): S {
            expect(decision).toEqual({ ok: true, events: expected });
            return decision.ok ? fold(decision.events, state) : state;
          },
          /** Asserts the refusal code (and optionally the message) and returns the message. */
          thenRefused(code: Code, message?: RegExp | string): string {
            if (decision.ok) expect.fail(`expected refusal ${code}, got events ${show(decision.events)}`);
            expect(decision.error.code).toBe(code);
            if (message instanceof RegExp) expect(decision.error.message).toMatch(message);
            else if (message !== undefined) expect(decision.error.message).toContain(message);
            return decision.error.message;
          },
        };
      },
    };
  }
  return { given, fold, show };
}
