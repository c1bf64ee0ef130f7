import { Set as PersistentSet } from 'immutable';
import type { CallRecord, WalletEvent } from '../../events/catalog';
import { formatUsd, parseUsd } from '../../money/usd';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

export const SIGNUP_GRANT = parseUsd('40.44');
export const MINIMUM_TOPUP = parseUsd('134.8');

export interface Hold {
  readonly amount: bigint;
  readonly keyId: string | null;
  readonly expiresAt: number;
}

export interface KeyUsage {
  /** Settled charges made with the key. */
  readonly spent: bigint;
  /** Open holds made with the key. */
  readonly held: bigint;
}

export interface WalletState {
  readonly status: 'none' | 'active' | 'inactive';
  readonly accountId: string;
  readonly name: string;
  readonly createdAt: number;
  /** Grants + top-ups − captured charges. May be negative: settlement is never refused. */
  readonly balance: bigint;
  /** Sum of open holds. Available = balance − held. */
  readonly held: bigint;
  readonly holds: ReadonlyMap<string, Hold>;
  /** Ids of holds already settled or released: a hold ends exactly once, and its id is
   * never reused. A persistent set, so evolve stays pure without copying it per event. */
  readonly closedHolds: PersistentSet<string>;
  readonly keys: ReadonlyMap<string, KeyUsage>;
  readonly credited: bigint;
  readonly captured: bigint;
  readonly limits: { readonly rpm: number | null; readonly concurrency: number | null };
}

export const initialWalletState: WalletState = {
  status: 'none',
  accountId: '',
  name: '',
  createdAt: 0,
  balance: 0n,
  held: 0n,
  holds: new Map(),
  closedHolds: PersistentSet<string>(),
  keys: new Map(),
  credited: 0n,
  captured: 0n,
  limits: { rpm: null, concurrency: null },
};

export const available = (state: WalletState): bigint => state.balance - state.held;

export type WalletCommand =
  | { type: 'OpenAccount'; accountId: string; name: string; now: number }
  | { type: 'TopUp'; topupId: string; amount: bigint; reference: string; now: number }
  | {
      type: 'Reserve';
      holdId: string;
      amount: bigint;
      keyId: string | null;
      /** The key's spend cap, read from the key aggregate by the caller; null = none. */
      spendCap: bigint | null;
      purpose: string;
      expiresAt: number;
      now: number;
    }
  | { type: 'Settle'; holdId: string; amount: bigint; call?: CallRecord; now: number }
  | { type: 'Release'; holdId: string; reason: string; call?: CallRecord; now: number }
  | { type: 'RecordRejectedCall'; call: CallRecord; now: number }
  | { type: 'Deactivate'; reason: string; now: number }
  | { type: 'Reactivate'; now: number }
  | { type: 'SetLimits'; rpm: number | null; concurrency: number | null; now: number };

export type WalletErrorCode =
  | 'account_not_found'
  | 'account_exists'
  | 'account_inactive'
  | 'invalid_amount'
  | 'topup_below_minimum'
  | 'insufficient_funds'
  | 'spend_cap_exceeded'
  | 'hold_exists'
  | 'hold_not_open'
  | 'invalid_limits';

type WalletDecision = Decision<WalletEvent, WalletErrorCode>;

function usageOf(state: WalletState, keyId: string | null): KeyUsage {
  return (keyId !== null && state.keys.get(keyId)) || { spent: 0n, held: 0n };
}

function withKeyUsage(state: WalletState, keyId: string | null, change: (u: KeyUsage) => KeyUsage): ReadonlyMap<string, KeyUsage> {
  if (keyId === null) return state.keys;
  const keys = new Map(state.keys);
  keys.set(keyId, change(usageOf(state, keyId)));
  return keys;
}

function withoutHold(state: WalletState, holdId: string): ReadonlyMap<string, Hold> {
  const holds = new Map(state.holds);
  holds.delete(holdId);
  return holds;
}

export function evolve(state: WalletState, event: WalletEvent): WalletState {
  switch (event.type) {
    case 'AccountOpened':
      return { ...state, status: 'active', accountId: event.data.account_id, name: event.data.name, createdAt: event.data.at };
    case 'CreditGranted':
    case 'WalletToppedUp':
      return { ...state, balance: state.balance + event.data.amount, credited: state.credited + event.data.amount };
    case 'FundsReserved': {
      const { hold_id, amount, key_id, expires_at } = event.data;
      const holds = new Map(state.holds);
      holds.set(hold_id, { amount, keyId: key_id, expiresAt: expires_at });
      return {
        ...state,
        held: state.held + amount,
        holds,
        keys: withKeyUsage(state, key_id, (u) => ({ ...u, held: u.held + amount })),
      };
    }
    case 'HoldSettled': {
      const hold = state.holds.get(event.data.hold_id);
      if (!hold) return state;
      const captured = event.data.captured;
      return {
        ...state,
        balance: state.balance - captured,
        held: state.held - hold.amount,
        captured: state.captured + captured,
        holds: withoutHold(state, event.data.hold_id),
        closedHolds: state.closedHolds.add(event.data.hold_id),
        keys: withKeyUsage(state, hold.keyId, (u) => ({ spent: u.spent + captured, held: u.held - hold.amount })),
      };
    }
    case 'HoldReleased': {
      const hold = state.holds.get(event.data.hold_id);
      if (!hold) return state;
      return {
        ...state,
        held: state.held - hold.amount,
        holds: withoutHold(state, event.data.hold_id),
        closedHolds: state.closedHolds.add(event.data.hold_id),
        keys: withKeyUsage(state, hold.keyId, (u) => ({ ...u, held: u.held - hold.amount })),
      };
    }
    case 'AccountDeactivated':
      return { ...state, status: 'inactive' };
    case 'AccountReactivated':
      return { ...state, status: 'active' };
    case 'AccountLimitsSet':
      return { ...state, limits: { rpm: event.data.rpm, concurrency: event.data.concurrency } };
    default:
      return state;
  }
}

export function decide(command: WalletCommand, state: WalletState): WalletDecision {
  if (command.type === 'OpenAccount') {
    if (state.status !== 'none') return refuse('account_exists', `account ${command.accountId} already exists`);
    return accept(
      { type: 'AccountOpened', data: { account_id: command.accountId, name: command.name, at: command.now } },
      { type: 'CreditGranted', data: { grant_id: `signup-${command.accountId}`, amount: SIGNUP_GRANT, reason: 'signup', at: command.now } },
    );
  }
  if (state.status === 'none') return refuse('account_not_found', 'account not found');

  switch (command.type) {
    case 'TopUp':
      if (command.amount < MINIMUM_TOPUP)
        return refuse('topup_below_minimum', `the minimum top-up is ${formatUsd(MINIMUM_TOPUP)} USD; got ${formatUsd(command.amount)}`);
      return accept({
        type: 'WalletToppedUp',
        data: { topup_id: command.topupId, amount: command.amount, reference: command.reference, at: command.now },
      });

    case 'Reserve': {
      if (command.amount < 0n) return refuse('invalid_amount', 'a reservation cannot be negative');
      if (state.status !== 'active') return refuse('account_inactive', 'the account is inactive');
      if (state.holds.has(command.holdId) || state.closedHolds.has(command.holdId))
        return refuse('hold_exists', `hold ${command.holdId} already exists`);
      const free = available(state);
      if (command.amount > free)
        return refuse(
          'insufficient_funds',
          `insufficient balance: this request needs up to ${formatUsd(command.amount)} USD and ${formatUsd(free < 0n ? 0n : free)} USD is available; top up your account`,
        );
      if (command.spendCap !== null) {
        const usage = usageOf(state, command.keyId);
        const capLeft = command.spendCap - usage.spent - usage.held;
        if (command.amount > capLeft)
          return refuse(
            'spend_cap_exceeded',
            `the key's spend cap of ${formatUsd(command.spendCap)} USD would be exceeded: ${formatUsd(capLeft < 0n ? 0n : capLeft)} USD of it is left`,
          );
      }
      return accept({
        type: 'FundsReserved',
        data: {
          hold_id: command.holdId,
          amount: command.amount,
          key_id: command.keyId,
          purpose: command.purpose,
          expires_at: command.expiresAt,
          at: command.now,
        },
      });
    }

    case 'Settle': {
      // Never refused for lack of funds: the balance may go negative and the next reservation is refused instead.
      const hold = state.holds.get(command.holdId);
      if (!hold) return refuse('hold_not_open', `hold ${command.holdId} is not open`);
      if (command.amount < 0n) return refuse('invalid_amount', 'a settlement cannot be negative');
      const released = hold.amount > command.amount ? hold.amount - command.amount : 0n;
      return accept({
        type: 'HoldSettled',
        data: {
          hold_id: command.holdId,
          hold_amount: hold.amount,
          captured: command.amount,
          released,
          ...(command.call ? { call: command.call } : {}),
          at: command.now,
        },
      });
    }

    case 'Release': {
      const hold = state.holds.get(command.holdId);
      if (!hold) return refuse('hold_not_open', `hold ${command.holdId} is not open`);
      return accept({
        type: 'HoldReleased',
        data: { hold_id: command.holdId, amount: hold.amount, reason: command.reason, ...(command.call ? { call: command.call } : {}), at: command.now },
      });
    }

    case 'Deactivate':
      if (state.status === 'inactive') return accept();
      return accept({ type: 'AccountDeactivated', data: { reason: command.reason, at: command.now } });

    case 'Reactivate':
      if (state.status === 'active') return accept();
      return accept({ type: 'AccountReactivated', data: { at: command.now } });

    case 'RecordRejectedCall':
      return accept({ type: 'CallRejected', data: { call: command.call, at: command.now } });

    case 'SetLimits':
      for (const [name, value] of [['rpm', command.rpm], ['concurrency', command.concurrency]] as const)
        if (value !== null && (!Number.isInteger(value) || value <= 0))
          return refuse('invalid_limits', `${name} must be a positive integer or null (unlimited)`);
      return accept({
        type: 'AccountLimitsSet',
        data: { rpm: command.rpm, concurrency: command.concurrency, at: command.now },
      });

    default:
      return assertNever(command);
  }
}

export const walletDecider: Decider<WalletCommand, WalletState, WalletEvent, WalletErrorCode> = {
  initialState: initialWalletState,
  evolve,
  decide,
};
