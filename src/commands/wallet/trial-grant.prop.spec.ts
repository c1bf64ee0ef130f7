/**
 * Issue 34: the spec's 40.44 trial credit is granted once per account. The admin API's accounts get it
 * with the opening; a holder's own sign-up opens with none and gets it by GrantTrialCredit once the
 * email address is verified. Whatever the commands and their order, an account never holds two trial
 * grants, and money stays conserved (credited = balance + captured + adjusted).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { givenWhenThen } from '../../../test/support/decider';
import type { WalletEvent } from '../../events/catalog';
import { parseUsd } from '../../money/usd';
import { SIGNUP_GRANT, decide, trialGrantId, walletDecider, type WalletCommand } from './decider';
import { evolve, initialWalletState, type WalletState } from './state';

const NOW = 1_700_000_000;
const ACCOUNT = 'acct_trial';
const { given } = givenWhenThen(walletDecider);

const opened: WalletEvent = { type: 'AccountOpened', data: { account_id: ACCOUNT, name: 'Ada', at: NOW } };
const granted = (amount: bigint): WalletEvent => ({ type: 'CreditGranted', data: { grant_id: `signup-${ACCOUNT}`, amount, reason: 'signup', at: NOW } });
const grantTrial = (amount = SIGNUP_GRANT): WalletCommand => ({ type: 'GrantTrialCredit', amount, now: NOW });

describe('wallet decider: the trial grant', () => {
  it('opens an account without a grant when the opening says none (a sign-up before verification)', () => {
    const state = given().when({ type: 'OpenAccount', accountId: ACCOUNT, name: 'Ada', trialGrant: null, now: NOW }).then([opened]);
    expect(state.balance).toBe(0n);
    expect(state.trialGranted).toBe(false);
  });

  it('opens an account with the 40.44 grant when the opening says so (the admin API)', () => {
    const state = given().when({ type: 'OpenAccount', accountId: ACCOUNT, name: 'Ada', trialGrant: SIGNUP_GRANT, now: NOW }).then([opened, granted(SIGNUP_GRANT)]);
    expect(state.balance).toBe(40_440_000_000n);
    expect(state.trialGranted).toBe(true);
  });

  it('grants the trial credit after the opening, with the grant id signup-{account}', () => {
    const state = given([opened]).when(grantTrial()).then([granted(SIGNUP_GRANT)]);
    expect(trialGrantId(ACCOUNT)).toBe(`signup-${ACCOUNT}`);
    expect(state.balance).toBe(SIGNUP_GRANT);
  });

  it('grants nothing a second time, nor to an account granted at its opening', () => {
    given([opened, granted(SIGNUP_GRANT)]).when(grantTrial()).then([]);
    given([opened, granted(parseUsd('1'))]).when(grantTrial(parseUsd('5'))).then([]);
  });

  it('refuses an unknown or inactive account, and an amount of 0 or less', () => {
    given().when(grantTrial()).thenRefused('account_not_found');
    given([opened, { type: 'AccountDeactivated', data: { reason: 'abuse', at: NOW } }]).when(grantTrial()).thenRefused('account_inactive');
    given([opened]).when(grantTrial(0n)).thenRefused('invalid_amount');
    given().when({ type: 'OpenAccount', accountId: ACCOUNT, name: 'Ada', trialGrant: -1n, now: NOW }).thenRefused('invalid_amount');
  });
});

const amount = fc.bigInt({ min: -2n, max: 100_000_000_000n });
const command: fc.Arbitrary<WalletCommand> = fc.oneof(
  fc.record({ type: fc.constant('OpenAccount' as const), accountId: fc.constant(ACCOUNT), name: fc.constant('p'), trialGrant: fc.option(amount, { nil: null }), now: fc.constant(NOW) }),
  fc.record({ type: fc.constant('GrantTrialCredit' as const), amount, now: fc.constant(NOW) }),
  fc.record({ type: fc.constant('TopUp' as const), topupId: fc.constant('t'), amount: fc.constant(parseUsd('200')), reference: fc.constantFrom('r1', 'r2'), now: fc.constant(NOW) }),
  fc.constant<WalletCommand>({ type: 'Deactivate', reason: 'x', now: NOW }),
  fc.constant<WalletCommand>({ type: 'Reactivate', now: NOW }),
  fc.record({ type: fc.constant('Reserve' as const), holdId: fc.constantFrom('h1', 'h2'), amount: fc.bigInt({ min: 0n, max: 50_000_000_000n }), keyId: fc.constant(null), spendCap: fc.constant(null), purpose: fc.constant('chat'), expiresAt: fc.constant(NOW + 60), now: fc.constant(NOW) }),
  fc.record({ type: fc.constant('Settle' as const), holdId: fc.constantFrom('h1', 'h2'), amount: fc.bigInt({ min: 0n, max: 50_000_000_000n }), now: fc.constant(NOW) }),
);

describe('wallet decider: the trial grant, whatever the commands', () => {
  it('is never granted twice, and money is conserved', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
        let state: WalletState = initialWalletState;
        const grants: bigint[] = [];
        for (const c of commands) {
          const decision = decide(c, state);
          if (!decision.ok) continue;
          for (const event of decision.events) {
            if (event.type === 'CreditGranted' && event.data.grant_id === trialGrantId(ACCOUNT)) grants.push(event.data.amount);
            state = evolve(state, event);
          }
        }
        expect(grants.length).toBeLessThanOrEqual(1);
        for (const g of grants) expect(g > 0n).toBe(true);
        expect(state.trialGranted).toBe(grants.length === 1);
        const toppedUp = [...state.topups.values()].reduce((sum, t) => sum + t.amount, 0n);
        expect(state.credited).toBe((grants[0] ?? 0n) + toppedUp);
        expect(state.credited).toBe(state.balance + state.captured + state.adjusted);
      }),
      { numRuns: 500 },
    );
  });
});
