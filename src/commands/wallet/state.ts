import { Map as PersistentMap, Set as PersistentSet } from 'immutable';
import type { WalletEvent } from '../../events/catalog';

// A wallet's state and how each event changes it (`evolve`, pure); what may happen next is decider.ts.

export interface Hold {
  readonly amount: bigint;
  readonly keyId: string | null;
  readonly expiresAt: number;
  /** The call the hold is for: what a release at its deadline writes in the call log. */
  readonly origin: HoldOrigin;
}

/** What the reservation said about its call. Reservations written before the event carried
 * these fields read them from `purpose` ("chat gpt-4o-mini": endpoint, then model) and use the
 * hold id as the request id (it was the request id then). */
export interface HoldOrigin {
  readonly model: string;
  readonly endpoint: string;
  readonly requestId: string;
  readonly reservedAt: number;
}

export interface KeyUsage {
  /** Settled charges made with the key. */
  readonly spent: bigint;
  /** Open holds made with the key. */
  readonly held: bigint;
}

/** Closed hold ids remembered per generation; the last 1,000 to 2,000 are remembered (about 100 bytes
 * each, in every process that caches the wallet: a few hundred kilobytes for a busy one). */
export const CLOSED_HOLD_GENERATION = 1_000;

/**
 * The ids of holds closed lately, in two generations: when the current one is full it becomes the
 * previous one, and the one before is forgotten. A hot wallet closes a hold per call, so remembering
 * every id for ever would grow its state (and every process's cache of it) without bound. Older ids
 * are kept by the event log: a hold id is the command id of its reservation, so reserving a forgotten
 * id again appends an event id that is already in the store (the ledger refuses that as hold_exists).
 */
export interface ClosedHolds {
  readonly current: PersistentSet<string>;
  readonly previous: PersistentSet<string>;
}

/** A top-up as its reference remembers it: a retry with the same reference is the same top-up. */
export interface TopUpRecord {
  readonly topupId: string;
  readonly amount: bigint;
}

/** An agent key's escrow: its cap, set aside from the available balance when its request was
 * approved. Its key's calls reserve against it alone; `open` until the key is revoked or deleted,
 * when what is left returns to the available balance. */
export interface Escrow {
  readonly funded: bigint;
  readonly open: boolean;
  /** What was left of it when it closed. */
  readonly returned: bigint;
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
  /** Persistent maps, so that evolve stays pure without copying them per event. */
  readonly holds: PersistentMap<string, Hold>;
  /** Holds closed lately: a hold ends exactly once, and its id does not open a second hold. */
  readonly closedHolds: ClosedHolds;
  readonly keys: PersistentMap<string, KeyUsage>;
  /** Every top-up of the account by its reference (the first one, if the log has several). Top-ups
   * are rare, so this stays small: about 300 bytes per top-up the account ever had. */
  readonly topups: PersistentMap<string, TopUpRecord>;
  readonly credited: bigint;
  readonly captured: bigint;
  /** Net amount taken by adjustments (re-rates): Σ(new − old) over adjusted calls. Money is
   * conserved as credited = balance + captured + adjusted. */
  readonly adjusted: bigint;
  /** References of the adjustments applied: an operator's re-rate runs once. */
  readonly adjustments: PersistentSet<string>;
  /** Taken back by the payment provider (refunds, lost disputes). Money is conserved as
   * credited = balance + captured + adjusted + debited. */
  readonly debited: bigint;
  /** What each debit reference has taken in all (a refund's is cumulative, as the provider reports it). */
  readonly debits: PersistentMap<string, bigint>;
  readonly limits: { readonly rpm: number | null; readonly concurrency: number | null };
  /** The channel group the account's calls are routed to; null: none (every channel). A key's own
   * group wins (src/channels/groups.ts). */
  readonly group: string | null;
  /** Whether the trial credit (grant `signup-{account}`) was granted: it is granted once. */
  readonly trialGranted: boolean;
  /** Escrows of the account's agent keys, by key id. */
  readonly escrows: PersistentMap<string, Escrow>;
  /** What the open escrows still set aside (Σ escrowLeft): part of the balance, not available. */
  readonly escrowed: bigint;
}

export const initialWalletState: WalletState = {
  status: 'none',
  accountId: '',
  name: '',
  createdAt: 0,
  balance: 0n,
  held: 0n,
  holds: PersistentMap<string, Hold>(),
  closedHolds: { current: PersistentSet<string>(), previous: PersistentSet<string>() },
  keys: PersistentMap<string, KeyUsage>(),
  topups: PersistentMap<string, TopUpRecord>(),
  credited: 0n,
  captured: 0n,
  adjusted: 0n,
  adjustments: PersistentSet<string>(),
  debited: 0n,
  debits: PersistentMap<string, bigint>(),
  limits: { rpm: null, concurrency: null },
  group: null,
  trialGranted: false,
  escrows: PersistentMap<string, Escrow>(),
  escrowed: 0n,
};

export const available = (state: WalletState): bigint => state.balance - state.held - state.escrowed;

/** What an escrow key may still reserve: its cap less its settled spend and its open holds (never
 * below 0: a settlement above its hold may overdraw the escrow, and the excess comes from the
 * enterprise's balance); 0 once the escrow is closed, or for a key without one. */
export function escrowLeft(state: WalletState, keyId: string | null): bigint {
  const escrow = keyId === null ? undefined : state.escrows.get(keyId);
  if (!escrow || !escrow.open) return 0n;
  const usage = usageOf(state, keyId);
  const left = escrow.funded - usage.spent - usage.held;
  return left > 0n ? left : 0n;
}

export function usageOf(state: WalletState, keyId: string | null): KeyUsage {
  return (keyId !== null && state.keys.get(keyId)) || { spent: 0n, held: 0n };
}

export function withKeyUsage(state: WalletState, keyId: string | null, change: (u: KeyUsage) => KeyUsage): PersistentMap<string, KeyUsage> {
  return keyId === null ? state.keys : state.keys.set(keyId, change(usageOf(state, keyId)));
}

export function closed(holds: ClosedHolds, holdId: string): ClosedHolds {
  if (holds.current.size < CLOSED_HOLD_GENERATION) return { current: holds.current.add(holdId), previous: holds.previous };
  return { current: PersistentSet<string>().add(holdId), previous: holds.current };
}

export const wasClosed = (state: WalletState, holdId: string): boolean =>
  state.closedHolds.current.has(holdId) || state.closedHolds.previous.has(holdId);

/**
 * A fresh copy of a state for evolve to change: one object literal of a fixed shape. (An object
 * spread followed by a few changed fields makes V8 build each state field by field through a
 * slow path, a few microseconds per event on the hot wallet path.)
 */
export function copy(state: WalletState): { -readonly [K in keyof WalletState]: WalletState[K] } {
  return {
    status: state.status,
    accountId: state.accountId,
    name: state.name,
    createdAt: state.createdAt,
    balance: state.balance,
    held: state.held,
    holds: state.holds,
    closedHolds: state.closedHolds,
    keys: state.keys,
    topups: state.topups,
    credited: state.credited,
    captured: state.captured,
    adjusted: state.adjusted,
    adjustments: state.adjustments,
    debited: state.debited,
    debits: state.debits,
    limits: state.limits,
    group: state.group,
    trialGranted: state.trialGranted,
    escrows: state.escrows,
    escrowed: state.escrowed,
  };
}

/** `next` with `escrowed` brought up to date for the one key an event touched. */
export function reescrowed<S extends { -readonly [K in keyof WalletState]: WalletState[K] }>(next: S, state: WalletState, keyId: string | null): S {
  if (keyId === null || !next.escrows.has(keyId)) return next;
  next.escrowed = state.escrowed - escrowLeft(state, keyId) + escrowLeft(next, keyId);
  return next;
}

export function originOf(data: Extract<WalletEvent, { type: 'FundsReserved' }>['data']): HoldOrigin {
  const space = data.purpose.indexOf(' ');
  return {
    model: data.model ?? (space < 0 ? '' : data.purpose.slice(space + 1)),
    endpoint: data.endpoint ?? (space < 0 ? data.purpose : data.purpose.slice(0, space)),
    requestId: data.request_id ?? data.hold_id,
    reservedAt: data.at,
  };
}

export function evolve(state: WalletState, event: WalletEvent): WalletState {
  const next = copy(state);
  switch (event.type) {
    case 'AccountOpened':
      next.status = 'active';
      next.accountId = event.data.account_id;
      next.name = event.data.name;
      next.createdAt = event.data.at;
      return next;
    case 'CreditGranted':
      next.balance = state.balance + event.data.amount;
      next.credited = state.credited + event.data.amount;
      if (event.data.grant_id === `signup-${state.accountId}`) next.trialGranted = true;
      return next;
    case 'WalletToppedUp': {
      const { reference, topup_id, amount } = event.data;
      next.balance = state.balance + amount;
      next.credited = state.credited + amount;
      if (!state.topups.has(reference)) next.topups = state.topups.set(reference, { topupId: topup_id, amount });
      return next;
    }
    case 'FundsReserved': {
      const { hold_id, amount, key_id, expires_at } = event.data;
      next.held = state.held + amount;
      next.holds = state.holds.set(hold_id, { amount, keyId: key_id, expiresAt: expires_at, origin: originOf(event.data) });
      next.keys = withKeyUsage(state, key_id, (u) => ({ spent: u.spent, held: u.held + amount }));
      return reescrowed(next, state, key_id);
    }
    case 'HoldSettled': {
      const hold = state.holds.get(event.data.hold_id);
      if (!hold) return state;
      const captured = event.data.captured;
      next.balance = state.balance - captured;
      next.held = state.held - hold.amount;
      next.captured = state.captured + captured;
      next.holds = state.holds.delete(event.data.hold_id);
      next.closedHolds = closed(state.closedHolds, event.data.hold_id);
      next.keys = withKeyUsage(state, hold.keyId, (u) => ({ spent: u.spent + captured, held: u.held - hold.amount }));
      return reescrowed(next, state, hold.keyId);
    }
    case 'HoldReleased': {
      const hold = state.holds.get(event.data.hold_id);
      if (!hold) return state;
      next.held = state.held - hold.amount;
      next.holds = state.holds.delete(event.data.hold_id);
      next.closedHolds = closed(state.closedHolds, event.data.hold_id);
      next.keys = withKeyUsage(state, hold.keyId, (u) => ({ spent: u.spent, held: u.held - hold.amount }));
      return reescrowed(next, state, hold.keyId);
    }
    case 'AccountDeactivated':
      next.status = 'inactive';
      return next;
    case 'AccountReactivated':
      next.status = 'active';
      return next;
    case 'AccountLimitsSet':
      next.limits = { rpm: event.data.rpm, concurrency: event.data.concurrency };
      return next;
    case 'AccountGroupSet':
      next.group = event.data.group;
      return next;
    case 'WalletAdjusted': {
      next.balance = state.balance + event.data.amount;
      next.adjusted = state.adjusted - event.data.amount;
      next.adjustments = state.adjustments.add(event.data.reference);
      let keys = state.keys;
      for (const call of event.data.calls) {
        if (call.key_id === null) continue;
        const u = keys.get(call.key_id) ?? { spent: 0n, held: 0n };
        keys = keys.set(call.key_id, { spent: u.spent + call.new_cost - call.old_cost, held: u.held });
      }
      next.keys = keys;
      let escrowed = 0n;
      for (const keyId of state.escrows.keys()) escrowed += escrowLeft(next, keyId);
      next.escrowed = escrowed;
      return next;
    }
    case 'WalletDebited': {
      const { reference, amount, total } = event.data;
      next.balance = state.balance - amount;
      next.debited = state.debited + amount;
      next.debits = state.debits.set(reference, total);
      return next;
    }
    case 'EscrowFunded': {
      const { key_id, amount } = event.data;
      next.escrows = state.escrows.set(key_id, { funded: amount, open: true, returned: 0n });
      return reescrowed(next, state, key_id);
    }
    case 'EscrowReturned': {
      const { key_id, amount } = event.data;
      const escrow = state.escrows.get(key_id);
      if (!escrow) return state;
      next.escrows = state.escrows.set(key_id, { ...escrow, open: false, returned: amount });
      next.escrowed = state.escrowed - escrowLeft(state, key_id);
      return next;
    }
    default:
      return state;
  }
}
