import type { PaymentEvent } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

/**
 * A paid top-up as the gateway knows it (stream `payment-{session}`): opened by the gateway, then what
 * the provider's webhooks said of it. Money moves on the wallet (WalletToppedUp, WalletDebited); this
 * stream is the payment's own history, what the payment list shows, and how a refund finds its account.
 * Every command is idempotent: providers deliver webhooks at least once, in any order.
 */
export interface PaymentState {
  readonly status: 'none' | 'open' | 'paid';
  readonly sessionId: string;
  readonly accountId: string;
  readonly provider: string;
  readonly amount: bigint;
  readonly url: string;
  readonly openedAt: number;
  readonly paymentIntent: string | null;
  /** Refunded in all (cumulative) and lost in disputes. */
  readonly refunded: bigint;
  readonly disputed: bigint;
  readonly disputes: ReadonlySet<string>;
}

export const initialPaymentState: PaymentState = {
  status: 'none',
  sessionId: '',
  accountId: '',
  provider: '',
  amount: 0n,
  url: '',
  openedAt: 0,
  paymentIntent: null,
  refunded: 0n,
  disputed: 0n,
  disputes: new Set(),
};

export type PaymentCommand =
  | { type: 'OpenCheckout'; sessionId: string; accountId: string; provider: string; amount: bigint; url: string; now: number }
  | { type: 'RecordPaid'; paymentIntent: string | null; amount: bigint; eventId: string; now: number }
  | { type: 'RecordRefund'; refunded: bigint; eventId: string; now: number }
  | { type: 'RecordDisputeLost'; disputeId: string; amount: bigint; eventId: string; now: number };

export type PaymentErrorCode = 'payment_exists' | 'payment_not_found' | 'payment_not_paid';

export function evolvePayment(state: PaymentState, event: PaymentEvent): PaymentState {
  switch (event.type) {
    case 'CheckoutOpened': {
      const d = event.data;
      return { ...state, status: 'open', sessionId: d.session_id, accountId: d.account_id, provider: d.provider, amount: d.amount, url: d.url, openedAt: d.at };
    }
    case 'PaymentPaid':
      return { ...state, status: 'paid', paymentIntent: event.data.payment_intent, amount: event.data.amount };
    case 'PaymentRefunded':
      return { ...state, refunded: event.data.refunded };
    case 'PaymentDisputeLost':
      return { ...state, disputed: state.disputed + event.data.amount, disputes: new Set([...state.disputes, event.data.dispute_id]) };
    default:
      return state;
  }
}

export function decidePayment(command: PaymentCommand, state: PaymentState): Decision<PaymentEvent, PaymentErrorCode> {
  if (command.type === 'OpenCheckout') {
    if (state.status !== 'none') return refuse('payment_exists', `payment ${command.sessionId} exists`);
    const { sessionId, accountId, provider, amount, url, now } = command;
    return accept({ type: 'CheckoutOpened', data: { session_id: sessionId, account_id: accountId, provider, amount, url, at: now } });
  }
  if (state.status === 'none') return refuse('payment_not_found', 'the gateway never opened this payment');
  switch (command.type) {
    case 'RecordPaid':
      if (state.status === 'paid') return accept();
      return accept({
        type: 'PaymentPaid',
        data: { session_id: state.sessionId, payment_intent: command.paymentIntent, amount: command.amount, event_id: command.eventId, at: command.now },
      });
    case 'RecordRefund':
      if (state.status !== 'paid') return refuse('payment_not_paid', 'a refund of a payment not paid');
      // Cumulative: an older or repeated delivery says nothing new.
      if (command.refunded <= state.refunded) return accept();
      return accept({ type: 'PaymentRefunded', data: { session_id: state.sessionId, refunded: command.refunded, event_id: command.eventId, at: command.now } });
    case 'RecordDisputeLost':
      if (state.status !== 'paid') return refuse('payment_not_paid', 'a dispute of a payment not paid');
      if (state.disputes.has(command.disputeId)) return accept();
      return accept({
        type: 'PaymentDisputeLost',
        data: { session_id: state.sessionId, dispute_id: command.disputeId, amount: command.amount, event_id: command.eventId, at: command.now },
      });
    default:
      return assertNever(command);
  }
}

export const paymentDecider: Decider<PaymentCommand, PaymentState, PaymentEvent, PaymentErrorCode> = {
  initialState: initialPaymentState,
  evolve: evolvePayment,
  decide: decidePayment,
};

/** What the payment list says of a payment. */
export function paymentStatus(state: Pick<PaymentState, 'status' | 'amount' | 'refunded' | 'disputed'>): 'open' | 'paid' | 'partially_refunded' | 'refunded' | 'disputed' {
  if (state.status !== 'paid') return 'open';
  if (state.disputed > 0n) return 'disputed';
  if (state.refunded >= state.amount && state.refunded > 0n) return 'refunded';
  if (state.refunded > 0n) return 'partially_refunded';
  return 'paid';
}
