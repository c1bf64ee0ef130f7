import { describe, expect, it } from 'vitest';
import type { PaymentEvent } from '../../events/catalog';
import { givenWhenThen } from '../../../test/support/decider';
import { paymentDecider, paymentStatus } from './decider';

const { given } = givenWhenThen(paymentDecider);
const USD = 1_000_000_000n;
const NOW = 1_700_000_000;

const opened: PaymentEvent = { type: 'CheckoutOpened', data: { session_id: 'cs_1', account_id: 'acct_a', provider: 'stripe', amount: 150n * USD, url: 'https://pay/cs_1', at: NOW } };
const paid: PaymentEvent = { type: 'PaymentPaid', data: { session_id: 'cs_1', payment_intent: 'pi_1', amount: 150n * USD, event_id: 'evt_1', at: NOW } };

describe('the payment decider', () => {
  it('opens a checkout once', () => {
    given([]).when({ type: 'OpenCheckout', sessionId: 'cs_1', accountId: 'acct_a', provider: 'stripe', amount: 150n * USD, url: 'https://pay/cs_1', now: NOW }).then([opened]);
    given([opened]).when({ type: 'OpenCheckout', sessionId: 'cs_1', accountId: 'acct_a', provider: 'stripe', amount: 150n * USD, url: 'x', now: NOW }).thenRefused('payment_exists');
  });

  it('records a payment once, and nothing of a session it never opened', () => {
    const state = given([opened]).when({ type: 'RecordPaid', paymentIntent: 'pi_1', amount: 150n * USD, eventId: 'evt_1', now: NOW }).then([paid]);
    expect(paymentStatus(state)).toBe('paid');
    given([opened, paid]).when({ type: 'RecordPaid', paymentIntent: 'pi_1', amount: 150n * USD, eventId: 'evt_2', now: NOW }).then([]);
    given([]).when({ type: 'RecordPaid', paymentIntent: 'pi_1', amount: 150n * USD, eventId: 'evt_1', now: NOW }).thenRefused('payment_not_found');
  });

  it('records cumulative refunds: only a larger total is news', () => {
    const refunded = (total: bigint): PaymentEvent => ({ type: 'PaymentRefunded', data: { session_id: 'cs_1', refunded: total, event_id: `evt_${total}`, at: NOW } });
    const partly = given([opened, paid]).when({ type: 'RecordRefund', refunded: 50n * USD, eventId: `evt_${50n * USD}`, now: NOW }).then([refunded(50n * USD)]);
    expect(paymentStatus(partly)).toBe('partially_refunded');
    given([opened, paid, refunded(50n * USD)]).when({ type: 'RecordRefund', refunded: 50n * USD, eventId: 'again', now: NOW }).then([]);
    given([opened, paid, refunded(150n * USD)]).when({ type: 'RecordRefund', refunded: 50n * USD, eventId: 'late', now: NOW }).then([]);
    expect(paymentStatus(given([opened, paid, refunded(150n * USD)]).state)).toBe('refunded');
    given([opened]).when({ type: 'RecordRefund', refunded: 50n * USD, eventId: 'early', now: NOW }).thenRefused('payment_not_paid');
  });

  it('records each lost dispute once', () => {
    const lost: PaymentEvent = { type: 'PaymentDisputeLost', data: { session_id: 'cs_1', dispute_id: 'dp_1', amount: 150n * USD, event_id: 'evt_d', at: NOW } };
    const state = given([opened, paid]).when({ type: 'RecordDisputeLost', disputeId: 'dp_1', amount: 150n * USD, eventId: 'evt_d', now: NOW }).then([lost]);
    expect(paymentStatus(state)).toBe('disputed');
    given([opened, paid, lost]).when({ type: 'RecordDisputeLost', disputeId: 'dp_1', amount: 150n * USD, eventId: 'evt_e', now: NOW }).then([]);
  });
});
