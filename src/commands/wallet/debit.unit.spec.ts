import { describe, expect, it } from 'vitest';
import type { WalletEvent } from '../../events/catalog';
import { parseUsd as usd } from '../../money/usd';
import { givenWhenThen } from '../../../test/support/decider';
import { SIGNUP_GRANT, decide, walletDecider, type WalletCommand } from './decider';

// given / when / then of the wallet's Debit (refunds and lost disputes, issue 34).
const NOW = 1_700_000_000;
const { given } = givenWhenThen(walletDecider);
const opened: WalletEvent[] = [
  { type: 'AccountOpened', data: { account_id: 'acc-1', name: 'Ada', at: NOW } },
  { type: 'CreditGranted', data: { grant_id: 'signup-acc-1', amount: SIGNUP_GRANT, reason: 'signup', at: NOW } },
];
const toppedUp = (amount: bigint): WalletEvent => ({ type: 'WalletToppedUp', data: { topup_id: 't-1', amount, reference: 'cs_1', at: NOW } });
describe('Debit (the payment provider took money back)', () => {
  const debited = (reference: string, amount: bigint, total: bigint): WalletEvent => ({
    type: 'WalletDebited',
    data: { debit_id: `${reference}@${total}`, reference, amount, total, reason: 'refund', at: NOW },
  });
  const debit = (reference: string, total: bigint): WalletCommand => ({ type: 'Debit', debitId: `${reference}@${total}`, reference, total, reason: 'refund', now: NOW });

  it('takes what the reference has not taken yet; a repeated or older total takes nothing', () => {
    given([...opened, toppedUp(usd('150'))]).when(debit('refund:pi_1', usd('50'))).then([debited('refund:pi_1', usd('50'), usd('50'))]);
    const after = [...opened, toppedUp(usd('150')), debited('refund:pi_1', usd('50'), usd('50'))];
    given(after).when(debit('refund:pi_1', usd('150'))).then([debited('refund:pi_1', usd('100'), usd('150'))]);
    given(after).when(debit('refund:pi_1', usd('50'))).then([]);
    given(after).when(debit('refund:pi_1', usd('20'))).then([]);
    given(after).when({ ...debit('refund:pi_1', -1n) }).thenRefused('invalid_amount');
  });

  it('may take the balance below zero, conserving money, and the next reservation is refused', () => {
    const state = given([...opened, toppedUp(usd('150'))]).when(debit('dispute:dp_1', usd('200'))).then([debited('dispute:dp_1', usd('200'), usd('200'))]);
    expect(state.balance).toBe(SIGNUP_GRANT + usd('150') - usd('200'));
    expect(state.credited).toBe(state.balance + state.captured + state.adjusted + state.debited);
    expect(decide({ type: 'Reserve', holdId: 'h', amount: 1n, keyId: null, spendCap: null, purpose: 'chat', expiresAt: NOW + 60, now: NOW }, state)).toMatchObject({ ok: false, error: { code: 'insufficient_funds' } });
  });
});
