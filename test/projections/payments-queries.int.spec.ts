import { describe, expect, it } from 'vitest';
import { PAYMENT_WEBHOOKS_STREAM, paymentStream, walletStream } from '../../src/events/catalog';
import { accountsProjection } from '../../src/projections/accounts/projection';
import { ledgerProjection } from '../../src/projections/ledger/projection';
import { paymentsProjection } from '../../src/projections/payments/projection';
import { paymentById, payments, setAsideCounts, setAsideDeliveries } from '../../src/projections/payments/queries';
import { projectionSpec, wallet, type GivenEvent } from './support';

// Paid top-ups as lists show them, and the wallet's debits in the accounts and ledger read models.
const spec = projectionSpec([paymentsProjection, accountsProjection, ledgerProjection]);
const USD = 1_000_000_000n;

const opened = (session: string, accountId: string, amount: bigint, at: number): GivenEvent => ({
  stream: paymentStream(session),
  type: 'CheckoutOpened',
  data: { session_id: session, account_id: accountId, provider: 'stripe', amount, url: `https://pay.test/${session}`, at },
});
const paid = (session: string, amount: bigint, at: number): GivenEvent => ({
  stream: paymentStream(session),
  type: 'PaymentPaid',
  data: { session_id: session, payment_intent: `pi_${session}`, amount, event_id: `evt_paid_${session}`, at },
});
const refunded = (session: string, total: bigint, at: number): GivenEvent => ({
  stream: paymentStream(session),
  type: 'PaymentRefunded',
  data: { session_id: session, refunded: total, event_id: `evt_ref_${session}_${total}`, at },
});
const debited = (accountId: string, reference: string, amount: bigint, total: bigint, at: number): GivenEvent => ({
  stream: walletStream(accountId),
  type: 'WalletDebited',
  data: { debit_id: `${reference}@${total}`, reference, amount, total, reason: 'refund', at },
});

describe('payments/queries.ts', () => {
  it("payments: an account's newest first with their status; every account's; a cursor; one by id", async () => {
    await spec.given([
      opened('cs_1', 'acct_a', 150n * USD, 1000),
      opened('cs_2', 'acct_a', 200n * USD, 1001),
      opened('cs_3', 'acct_a', 140n * USD, 1002),
      opened('cs_4', 'acct_b', 300n * USD, 1003),
      paid('cs_1', 150n * USD, 1010),
      paid('cs_2', 200n * USD, 1011),
      refunded('cs_2', 50n * USD, 1012),
      paid('cs_4', 300n * USD, 1013),
      refunded('cs_4', 300n * USD, 1014),
    ]);
    const mine = await payments(spec.sql, 'acct_a', 10);
    expect(mine.map((p) => [p.sessionId, p.status, p.refunded])).toEqual([
      ['cs_3', 'open', 0n],
      ['cs_2', 'partially_refunded', 50n * USD],
      ['cs_1', 'paid', 0n],
    ]);
    expect((await payments(spec.sql, null, 10)).map((p) => p.sessionId)).toEqual(['cs_4', 'cs_3', 'cs_2', 'cs_1']);
    expect((await payments(spec.sql, null, 2, { createdAt: 1002, sessionId: 'cs_3' })).map((p) => p.sessionId)).toEqual(['cs_2', 'cs_1']);
    expect(await paymentById(spec.sql, 'cs_4')).toMatchObject({ accountId: 'acct_b', status: 'refunded', paymentIntent: 'pi_cs_4', amount: 300n * USD });
    expect(await paymentById(spec.sql, 'cs_none')).toBeNull();
    await spec.replayGivesSameRows();
  });

  it('setAsideDeliveries and setAsideCounts: deliveries not applied, newest first, once per provider event', async () => {
    const aside = (eventId: string, outcome: 'unmatched' | 'failed', at: number): GivenEvent => ({
      stream: PAYMENT_WEBHOOKS_STREAM,
      type: 'PaymentWebhookSetAside',
      data: { event_id: eventId, event_type: 'checkout.session.completed', outcome, object_id: `cs_${eventId}`, reason: 'never opened', at },
    });
    await spec.given([aside('evt_1', 'unmatched', 1000), aside('evt_2', 'failed', 1001), aside('evt_1', 'unmatched', 1002)]);
    expect((await setAsideDeliveries(spec.sql, 10)).map((d) => [d.eventId, d.outcome])).toEqual([
      ['evt_2', 'failed'],
      ['evt_1', 'unmatched'],
    ]);
    expect(await setAsideCounts(spec.sql)).toEqual({ unmatched: 1, failed: 1 });
    await spec.replayGivesSameRows();
  });

  it("a wallet's debits lower its balance, count as debited, and are ledger entries of their own", async () => {
    await spec.given([
      wallet.opened('acct_a', 1000),
      wallet.granted('acct_a', 40n * USD, 1000),
      wallet.toppedUp('acct_a', 150n * USD, 'cs_1', 1001),
      debited('acct_a', 'refund:pi_1', 50n * USD, 50n * USD, 1002),
      debited('acct_a', 'dispute:dp_1', 150n * USD, 150n * USD, 1003),
    ]);
    const [account] = await spec.sql.query<{ balance: string; debited: string; credited: string }>(`SELECT balance::text, debited::text, credited::text FROM accounts WHERE account_id = 'acct_a'`);
    expect(account).toEqual({ balance: String(-10n * USD), debited: String(200n * USD), credited: String(190n * USD) });
    const entries = await spec.sql.query<{ entry_type: string; amount: string; balance_after: string; reference: string }>(
      `SELECT entry_type, amount::text, balance_after::text, reference FROM ledger_entries WHERE account_id = 'acct_a' AND entry_type = 'debit' ORDER BY seq`,
    );
    expect(entries).toEqual([
      { entry_type: 'debit', amount: String(50n * USD), balance_after: String(140n * USD), reference: 'refund:pi_1' },
      { entry_type: 'debit', amount: String(150n * USD), balance_after: String(-10n * USD), reference: 'dispute:dp_1' },
    ]);
    await spec.replayGivesSameRows();
  });
});
