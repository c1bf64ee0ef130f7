/**
 * Property tests of paid top-ups and the provider's debits (issue 34): a payment session credits once
 * whatever the number of its deliveries, refunds (reported cumulatively, redelivered, out of order) and lost
 * disputes take back exactly what they say, money is conserved, and replaying a history changes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WalletEvent } from '../../events/catalog';
import { MINIMUM_TOPUP, SIGNUP_GRANT, decide, type WalletCommand } from './decider';
import { available, evolve, initialWalletState, type WalletState } from './state';

const NOW = 1_700_000_000;
const CENT = 10_000_000n;
const SESSIONS = ['cs_a', 'cs_b', 'cs_c'] as const;
const SOURCES = ['refund:pi_a', 'refund:pi_b', 'dispute:dp_a'] as const;

/** A session's amount is fixed by the session (a redelivery carries the same one). */
const sessionAmount = (session: string) => MINIMUM_TOPUP + BigInt(SESSIONS.indexOf(session as never)) * 1000n * CENT;

const step = fc.oneof(
  fc.record({ type: fc.constant('TopUp' as const), session: fc.constantFrom(...SESSIONS) }),
  fc.record({ type: fc.constant('Debit' as const), reference: fc.constantFrom(...SOURCES), total: fc.bigInt({ min: 0n, max: 40_000n }).map((c) => c * CENT) }),
  fc.record({ type: fc.constant('Spend' as const), amount: fc.bigInt({ min: 0n, max: 5_000n }).map((c) => c * CENT) }),
);

type Step = { type: string; session?: string; reference?: string; total?: bigint; amount?: bigint };

function commandOf(s: Step, i: number): WalletCommand[] {
  if (s.type === 'TopUp')
    return [{ type: 'TopUp', topupId: `stripe-${s.session}`, amount: sessionAmount(s.session!), reference: s.session!, now: NOW }];
  if (s.type === 'Debit') return [{ type: 'Debit', debitId: `d${i}`, reference: s.reference!, total: s.total!, reason: s.reference!.split(':')[0]!, now: NOW }];
  return [];
}

function run(steps: readonly Step[]) {
  let state: WalletState = initialWalletState;
  const events: WalletEvent[] = [];
  const apply = (command: WalletCommand) => {
    const decision = decide(command, state);
    if (!decision.ok) return decision;
    for (const event of decision.events) {
      events.push(event);
      state = evolve(state, event);
    }
    return decision;
  };
  apply({ type: 'OpenAccount', accountId: 'acct_p', name: 'p', trialGrant: SIGNUP_GRANT, now: NOW });
  const commands: WalletCommand[] = [];
  steps.forEach((s, i) => {
    if (s.type === 'Spend') {
      // A call reserved and settled: spending takes from the same balance the debits do.
      const reserved = apply({ type: 'Reserve', holdId: `h${i}`, amount: s.amount!, keyId: null, spendCap: null, purpose: 'chat m', expiresAt: NOW + 60, now: NOW });
      if (reserved.ok) apply({ type: 'Settle', holdId: `h${i}`, amount: s.amount!, now: NOW });
      return;
    }
    for (const command of commandOf(s, i)) {
      commands.push(command);
      const decision = apply(command);
      expect(decision.ok).toBe(true);
    }
  });
  return { state, events, commands, apply: (c: WalletCommand) => decide(c, state) };
}

describe('paid top-ups and provider debits', () => {
  it('credit each session once, debit each reference its largest total, and conserve money', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const { state, events } = run(steps);
        const credits = events.filter((e) => e.type === 'WalletToppedUp');
        const sessions = new Set(steps.filter((s) => s.type === 'TopUp').map((s) => (s as { session: string }).session));
        // Exactly once per session, whatever the number of deliveries.
        expect(credits.map((e) => e.data.reference).sort()).toEqual([...sessions].sort());
        for (const reference of SOURCES) {
          const totals = steps.filter((s) => s.type === 'Debit' && s.reference === reference).map((s) => (s as { total: bigint }).total);
          const largest = totals.reduce((a, b) => (b > a ? b : a), 0n);
          const taken = events.filter((e) => e.type === 'WalletDebited' && e.data.reference === reference).reduce((sum, e) => sum + (e.data as { amount: bigint }).amount, 0n);
          expect(taken).toBe(largest);
        }
        const movements = events.reduce((sum, e) => {
          if (e.type === 'CreditGranted' || e.type === 'WalletToppedUp') return sum + e.data.amount;
          if (e.type === 'WalletDebited') return sum - e.data.amount;
          if (e.type === 'HoldSettled') return sum - e.data.captured;
          return sum;
        }, 0n);
        expect(state.balance).toBe(movements);
        expect(state.credited).toBe(state.balance + state.captured + state.adjusted + state.debited);
        expect(state.credited).toBe(SIGNUP_GRANT + [...sessions].reduce((sum, s) => sum + sessionAmount(s), 0n));
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 2000) },
    );
  });

  it('replaying every top-up and debit of a history changes nothing', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const { commands, apply } = run(steps);
        for (const command of commands) {
          const again = apply({ ...command, ...(command.type === 'Debit' ? { debitId: 'replayed' } : { topupId: 'replayed' }) } as WalletCommand);
          expect(again).toEqual({ ok: true, events: [] });
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 2000) },
    );
  });

  it('a debit may take the balance below zero, and then no reservation passes', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10_000n * CENT }), fc.bigInt({ min: 1n, max: 100n * CENT }), (extra, ask) => {
        const { state, apply } = run([{ type: 'Debit', reference: 'dispute:dp_a', total: SIGNUP_GRANT + extra }]);
        expect(state.balance).toBe(-extra);
        expect(available(state) < 0n).toBe(true);
        const refused = apply({ type: 'Reserve', holdId: 'next', amount: ask, keyId: null, spendCap: null, purpose: 'chat m', expiresAt: NOW + 60, now: NOW });
        expect(refused.ok ? null : refused.error.code).toBe('insufficient_funds');
      }),
      { numRuns: 500 },
    );
  });
});
