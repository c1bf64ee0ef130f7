import { CommandHandler, eventIdFor } from '../commands/handle-command';
import type { Ledger } from '../commands/ledger';
import { paymentDecider, type PaymentCommand, type PaymentState } from '../commands/payment/decider';
import { MINIMUM_TOPUP } from '../commands/wallet/decider';
import {
  PAYMENT_WEBHOOKS_STREAM,
  decodeRecorded,
  paymentIntentStream,
  paymentStream,
  schemaVersion,
  type PaymentEvent,
} from '../events/catalog';
import type { EventStore, Position } from '../events/store/port';
import { formatUsd } from '../money/usd';
import type { NoticeOutcome, PaymentNotice } from './notice';
import { CENT, centsOf, type PaymentProvider } from './provider';

export type PaymentErrorCode = 'invalid_request' | 'payments_unavailable' | 'payment_not_found' | 'payment_not_refundable' | 'provider_error';
export type PaymentResult<T> = ({ ok: true } & T) | { ok: false; error: { code: PaymentErrorCode; message: string } };

/** The top-up's id derives from the session: every instance and delivery decides the same command. */
const topupIdOf = (sessionId: string) => eventIdFor(`stripe-topup:${sessionId}`, 0) as `${string}-${string}-${string}-${string}-${string}`;

const fail = (code: PaymentErrorCode, message: string) => ({ ok: false as const, error: { code, message } });

export interface CheckoutUrls {
  readonly successUrl: string;
  readonly cancelUrl: string;
}

/**
 * Paid top-ups: opening a provider's checkout, and applying what the provider says of its payments.
 * Money moves only on the wallet, by its decider: a paid session is a top-up whose reference is the
 * session id (credited once, whatever the number of deliveries or instances), a refund or lost dispute a
 * debit whose reference is the payment intent or the dispute. The payment's own stream keeps its history.
 */
export class Payments {
  private readonly payments: CommandHandler<PaymentCommand, PaymentState, PaymentEvent>;

  constructor(
    private readonly store: EventStore,
    private readonly ledger: Ledger,
    /** null: no provider configured, top-ups are the operator's (admin top-ups). */
    readonly provider: PaymentProvider | null,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {
    this.payments = new CommandHandler(store, paymentDecider, 10_000);
  }

  /** Opens a checkout for a top-up of `amount` (units): at least the spec's minimum, whole cents. Nothing
   * reaches the provider when the amount is refused. */
  async checkout(accountId: string, amount: bigint, urls: CheckoutUrls): Promise<PaymentResult<{ sessionId: string; url: string; amount: bigint; position: Position | null }>> {
    if (!this.provider) return fail('payments_unavailable', 'top-ups are handled by the operator: no payment provider is configured');
    if (amount < MINIMUM_TOPUP) return fail('invalid_request', `amount_usd: the minimum top-up is ${formatUsd(MINIMUM_TOPUP)} USD; got ${formatUsd(amount)}`);
    const cents = centsOf(amount);
    if (cents === null) return fail('invalid_request', 'amount_usd: a top-up is paid in whole cents (at most 2 decimal places)');
    let opened;
    try {
      opened = await this.provider.openCheckout({ accountId, amountCents: cents, ...urls });
    } catch (error) {
      return fail('provider_error', `the payment provider could not open a checkout: ${error instanceof Error ? error.message : String(error)}`);
    }
    const command = { type: 'OpenCheckout', sessionId: opened.id, accountId, provider: this.provider.name, amount, url: opened.url, now: this.now() } as const;
    const handled = await this.payments.handle(paymentStream(opened.id), command, { commandId: `open:${opened.id}`, metadata: { actor: accountId } });
    if (!handled.ok) return fail('provider_error', `the provider answered a session id the gateway knows already (${opened.id})`);
    return { ok: true, sessionId: opened.id, url: opened.url, amount, position: handled.position };
  }

  /** The payment as its stream tells it (status `none` for a session the gateway never opened). */
  async payment(sessionId: string): Promise<PaymentState> {
    return (await this.payments.load(paymentStream(sessionId))).state;
  }

  /** Applies a provider's notice; every path is idempotent, so a redelivery (here or on another instance)
   * changes nothing. Throws only on a failure worth the provider's retry (the store unreachable). */
  async apply(notice: PaymentNotice): Promise<NoticeOutcome> {
    switch (notice.kind) {
      case 'ignored':
        return 'ignored';
      case 'paid':
        return this.paid(notice);
      case 'refunded': {
        const link = await this.linkOf(notice.paymentIntent);
        if (!link) return this.setAside(notice.eventId, 'charge.refunded', 'unmatched', notice.paymentIntent, 'a payment intent of no payment the gateway opened');
        const debited = await this.ledger.debit(link.accountId, `refund:${notice.paymentIntent}`, notice.refundedCents * CENT, 'refund', 'stripe');
        if (!debited.ok) return this.setAside(notice.eventId, 'charge.refunded', 'failed', notice.paymentIntent, debited.error.message);
        const recorded = await this.record(link.sessionId, { type: 'RecordRefund', refunded: notice.refundedCents * CENT, eventId: notice.eventId, now: this.now() }, `refund:${notice.paymentIntent}:${notice.refundedCents}`);
        return recorded ? 'debited' : 'duplicate';
      }
      case 'dispute_lost': {
        const link = await this.linkOf(notice.paymentIntent);
        if (!link) return this.setAside(notice.eventId, 'charge.dispute.closed', 'unmatched', notice.disputeId, 'a dispute of no payment the gateway opened');
        const debited = await this.ledger.debit(link.accountId, `dispute:${notice.disputeId}`, notice.amountCents * CENT, 'dispute_lost', 'stripe');
        if (!debited.ok) return this.setAside(notice.eventId, 'charge.dispute.closed', 'failed', notice.disputeId, debited.error.message);
        const command = { type: 'RecordDisputeLost', disputeId: notice.disputeId, amount: notice.amountCents * CENT, eventId: notice.eventId, now: this.now() } as const;
        return (await this.record(link.sessionId, command, `dispute:${notice.disputeId}`)) ? 'debited' : 'duplicate';
      }
    }
  }

  /** Asks the provider to refund a paid payment (null: all that is left of it); its notice then debits. */
  async refund(sessionId: string, amount: bigint | null): Promise<PaymentResult<{ refundId: string; amount: bigint }>> {
    if (!this.provider) return fail('payments_unavailable', 'no payment provider is configured');
    const state = await this.payment(sessionId);
    if (state.status === 'none') return fail('payment_not_found', `payment ${sessionId} not found`);
    if (state.status !== 'paid' || !state.paymentIntent) return fail('payment_not_refundable', `payment ${sessionId} is not paid`);
    const left = state.amount - state.refunded - state.disputed;
    const wanted = amount ?? left;
    const cents = centsOf(wanted);
    if (cents === null || wanted <= 0n) return fail('invalid_request', 'amount_usd: a refund is a positive number of whole cents');
    if (wanted > left) return fail('invalid_request', `amount_usd: at most ${formatUsd(left)} USD of this payment is left to refund`);
    try {
      const refund = await this.provider.refund(state.paymentIntent, amount === null ? null : cents);
      return { ok: true, refundId: refund.id, amount: wanted };
    } catch (error) {
      return fail('provider_error', `the payment provider refused the refund: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private async paid(notice: Extract<PaymentNotice, { kind: 'paid' }>): Promise<NoticeOutcome> {
    const state = await this.payment(notice.sessionId);
    // Never credited: a session the gateway did not open, or one opened for another account.
    if (state.status === 'none' || (notice.accountRef !== null && notice.accountRef !== state.accountId))
      return this.setAside(notice.eventId, 'checkout.session.completed', 'unmatched', notice.sessionId, 'a checkout session the gateway never opened');
    const amount = notice.amountCents * CENT;
    // The wallet's reference dedup makes this exactly once per session; the ids derive from the session.
    const credited = await this.ledger.topUp(state.accountId, amount, notice.sessionId, topupIdOf(notice.sessionId), 'stripe');
    if (!credited.ok) return this.setAside(notice.eventId, 'checkout.session.completed', 'failed', notice.sessionId, credited.error.message);
    if (notice.paymentIntent) {
      const linked = { payment_intent: notice.paymentIntent, session_id: notice.sessionId, account_id: state.accountId, at: this.now() };
      await this.appendOnce(paymentIntentStream(notice.paymentIntent), `link:${notice.paymentIntent}`, 'PaymentIntentLinked', linked);
    }
    const recorded = await this.record(notice.sessionId, { type: 'RecordPaid', paymentIntent: notice.paymentIntent, amount, eventId: notice.eventId, now: this.now() }, `paid:${notice.sessionId}`);
    return recorded && state.status !== 'paid' ? 'credited' : 'duplicate';
  }

  /** True when the command appended something (false: its news was known already). */
  private async record(sessionId: string, command: PaymentCommand, commandId: string): Promise<boolean> {
    const handled = await this.payments.handle(paymentStream(sessionId), command, { commandId, metadata: { actor: 'stripe' } });
    return handled.ok && handled.events.length > 0 && !handled.duplicate;
  }

  private async linkOf(paymentIntent: string): Promise<{ sessionId: string; accountId: string } | null> {
    const [first] = await this.store.readStream(paymentIntentStream(paymentIntent), { maxCount: 1 });
    if (!first) return null;
    const event = decodeRecorded(first);
    return event.type === 'PaymentIntentLinked' ? { sessionId: event.data.session_id, accountId: event.data.account_id } : null;
  }

  /** Records a delivery the gateway did not apply, once per provider event (its id makes the append idempotent). */
  private async setAside(eventId: string, eventType: string, outcome: 'unmatched' | 'failed', objectId: string, reason: string): Promise<NoticeOutcome> {
    await this.appendOnce(PAYMENT_WEBHOOKS_STREAM, `aside:${eventId}`, 'PaymentWebhookSetAside', {
      event_id: eventId,
      event_type: eventType,
      outcome,
      object_id: objectId,
      reason,
      at: this.now(),
    });
    return outcome;
  }

  private async appendOnce(streamId: string, commandId: string, type: string, data: Record<string, unknown>) {
    await this.store.append(streamId, [{ id: eventIdFor(commandId, 0), type, data, metadata: { actor: 'stripe', schema_version: schemaVersion(type) } }], 'any');
  }
}
