import { initialKeyState } from '../key/decider';
/**
 * A snapshot is a cache of the log: a wallet folded from a snapshot (through its JSON text, as the
 * snapshot table stores it) plus the events after it must be exactly the wallet folded from the
 * whole stream, whatever the history and wherever the snapshot was taken.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalState as canonical } from '../../../test/support/canonical-state';
import type { WalletEvent } from '../../events/catalog';
import { SIGNUP_GRANT, decide, type WalletCommand } from '../wallet/decider';
import { evolve, initialWalletState, type WalletState } from '../wallet/state';
import { decodeState, encodeState, stateVersion } from './codec';

const NOW = 1_700_000_000;
const USD = 1_000_000_000n;

type Step =
  | { kind: 'topup'; cents: number }
  | { kind: 'reserve'; key: number | null; cents: number }
  | { kind: 'settle'; pick: number; percent: number }
  | { kind: 'release'; pick: number }
  | { kind: 'limits'; rpm: number | null }
  | { kind: 'deactivate' | 'reactivate' }
  | { kind: 'adjust'; cents: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('topup' as const), cents: fc.integer({ min: 13_480, max: 50_000 }) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('reserve' as const), key: fc.option(fc.nat(3)), cents: fc.integer({ min: 1, max: 500 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), percent: fc.integer({ min: 0, max: 150 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('limits' as const), rpm: fc.option(fc.integer({ min: 1, max: 1000 })) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('deactivate' as const, 'reactivate' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('adjust' as const), cents: fc.integer({ min: -100, max: 100 }) }) },
);

/** The events a random history leaves (refused commands leave none). */
function history(steps: readonly Step[]): WalletEvent[] {
  let state = initialWalletState;
  const events: WalletEvent[] = [];
  const run = (command: WalletCommand) => {
    const decision = decide(command, state);
    if (!decision.ok) return;
    for (const event of decision.events) {
      state = evolve(state, event);
      events.push(event);
    }
  };
  run({ type: 'OpenAccount', accountId: 'acct_snap', name: 'snap', trialGrant: SIGNUP_GRANT, now: NOW });
  let n = 0;
  for (const s of steps) {
    n += 1;
    const open = [...state.holds.keys()];
    switch (s.kind) {
      case 'topup':
        run({ type: 'TopUp', topupId: `t${n}`, amount: (BigInt(s.cents) * USD) / 100n, reference: `ref${n % 5}`, now: NOW + n });
        break;
      case 'reserve':
        run({ type: 'Reserve', holdId: `h${n}`, amount: (BigInt(s.cents) * USD) / 1000n, keyId: s.key === null ? null : `k${s.key}`, spendCap: null, purpose: 'chat', expiresAt: NOW + 600, origin: { model: 'm', endpoint: 'chat-completions', requestId: `r${n}` }, now: NOW + n });
        break;
      case 'settle': {
        const holdId = open[s.pick % Math.max(open.length, 1)];
        const hold = holdId === undefined ? undefined : state.holds.get(holdId);
        if (hold) run({ type: 'Settle', holdId: holdId!, amount: (hold.amount * BigInt(s.percent)) / 100n, now: NOW + n });
        break;
      }
      case 'release': {
        const holdId = open[s.pick % Math.max(open.length, 1)];
        if (holdId !== undefined) run({ type: 'Release', holdId, reason: 'test', now: NOW + n });
        break;
      }
      case 'limits':
        run({ type: 'SetLimits', rpm: s.rpm, concurrency: null, now: NOW + n });
        break;
      case 'deactivate':
        run({ type: 'Deactivate', reason: 'test', now: NOW + n });
        break;
      case 'reactivate':
        run({ type: 'Reactivate', now: NOW + n });
        break;
      case 'adjust':
        run({ type: 'Adjust', adjustmentId: `a${n}`, reference: `adj${n}`, reason: 'rerate', model: 'm', calls: [{ requestId: `r${n}`, keyId: 'k0', oldCost: 1000n, newCost: BigInt(1000 + s.cents) }], now: NOW + n });
        break;
    }
  }
  return events;
}

const fold = (state: WalletState, events: readonly WalletEvent[]) => events.reduce(evolve, state);


describe('wallet snapshots', () => {
  it('snapshot + tail folds to the state of the whole stream, for any history and snapshot point', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 120 }), fc.nat(), (steps, at) => {
        const events = history(steps);
        const cut = at % (events.length + 1);
        const whole = fold(initialWalletState, events);
        const stored = JSON.parse(JSON.stringify(encodeState(fold(initialWalletState, events.slice(0, cut)))));
        const restored = fold(decodeState(stored) as WalletState, events.slice(cut));
        expect(canonical(restored)).toEqual(canonical(whole));
        // And the next decisions are the same on both.
        const next: WalletCommand = { type: 'Reserve', holdId: 'next', amount: 1n, keyId: 'k0', spendCap: null, purpose: 'chat', expiresAt: NOW + 600, now: NOW + 999 };
        expect(canonical(decide(next, restored))).toEqual(canonical(decide(next, whole)));
      }),
      { numRuns: 300 },
    );
  });

  it('a version names the aggregate, its number and the shape of its state: a new field gives a new version', () => {
    const v1 = stateVersion('wallet', 1, initialWalletState);
    expect(v1).toMatch(/^wallet\.1\.[0-9a-f]{16}$/);
    expect(stateVersion('wallet', 1, initialWalletState)).toBe(v1);
    expect(stateVersion('wallet', 2, initialWalletState)).not.toBe(v1);
    expect(stateVersion('wallet', 1, { ...initialWalletState, escrow: 0n })).not.toBe(v1);
  });

  it('the channel group in wallet and key states is part of their shape: snapshots taken before it are not read', () => {
    const { group: _wallet, ...walletBefore } = initialWalletState;
    expect(stateVersion('wallet', 1, walletBefore)).not.toBe(stateVersion('wallet', 1, initialWalletState));
    const { group: _key, ...settingsBefore } = initialKeyState.settings;
    expect(stateVersion('key', 1, { ...initialKeyState, settings: settingsBefore })).not.toBe(stateVersion('key', 1, initialKeyState));
  });

  it('refuses to snapshot what it could not restore', () => {
    expect(() => encodeState({ at: new Date() })).toThrow(/cannot hold/);
    expect(() => encodeState({ $b: 1 })).toThrow(/may not start/);
  });
});
