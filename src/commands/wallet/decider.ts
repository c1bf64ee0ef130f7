import { Map as PersistentMap, Set as PersistentSet } from 'immutable';
import { INT32_MAX, type CallRecord, type WalletEvent } from '../../events/catalog';
import { formatUsd, parseUsd } from '../../money/usd';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

export const SIGNUP_GRANT = parseUsd('40.44');
export const MINIMUM_TOPUP = parseUsd('134.8');

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
  readonly limits: { readonly rpm: number | null; readonly concurrency: number | null };
  /** The channel group the account's calls are routed to; null: none (every channel). A key's own
   * group wins (src/channels/groups.ts). */
  readonly group: string | null;
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
  limits: { rpm: null, concurrency: null },
  group: null,
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

export type WalletCommand =
  /** `group`: the channel group it is bound to from the start (absent: none). */
  | { type: 'OpenAccount'; accountId: string; name: string; group?: string | null; now: number }
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
      /** The call, for its call-log row should the hold be released at its deadline. */
      origin?: { model: string; endpoint: string; requestId: string };
      now: number;
    }
  | { type: 'Settle'; holdId: string; amount: bigint; call?: CallRecord; uncharged?: bigint; now: number }
  | { type: 'Release'; holdId: string; reason: string; call?: CallRecord; now: number }
  | { type: 'RecordRejectedCall'; call: CallRecord; now: number }
  | { type: 'Deactivate'; reason: string; now: number }
  | { type: 'Reactivate'; now: number }
  | { type: 'SetLimits'; rpm: number | null; concurrency: number | null; now: number }
  | { type: 'SetGroup'; group: string | null; now: number }
  | { type: 'FundEscrow'; keyId: string; amount: bigint; requestId: string; now: number }
  | { type: 'ReturnEscrow'; keyId: string; now: number }
  | {
      type: 'Adjust';
      adjustmentId: string;
      reference: string;
      reason: string;
      model: string;
      calls: readonly AdjustmentCall[];
      now: number;
    };

/** A call an adjustment re-prices: its captured cost and its cost at the new price. */
export interface AdjustmentCall {
  readonly requestId: string;
  readonly keyId: string | null;
  readonly oldCost: bigint;
  readonly newCost: bigint;
}

/** Calls per WalletAdjusted event: a re-rate of a busy account's month is several events of
 * one append, so no single event grows without bound. */
export const ADJUSTMENT_PART_CALLS = 1_000;

export type WalletErrorCode =
  | 'account_not_found'
  | 'account_exists'
  | 'account_inactive'
  | 'invalid_amount'
  | 'topup_below_minimum'
  | 'topup_reference_conflict'
  | 'insufficient_funds'
  | 'spend_cap_exceeded'
  | 'hold_exists'
  | 'hold_not_open'
  | 'invalid_limits'
  | 'invalid_adjustment'
  | 'adjustment_exists'
  | 'escrow_not_found';

type WalletDecision = Decision<WalletEvent, WalletErrorCode>;

function usageOf(state: WalletState, keyId: string | null): KeyUsage {
  return (keyId !== null && state.keys.get(keyId)) || { spent: 0n, held: 0n };
}

function withKeyUsage(state: WalletState, keyId: string | null, change: (u: KeyUsage) => KeyUsage): PersistentMap<string, KeyUsage> {
  return keyId === null ? state.keys : state.keys.set(keyId, change(usageOf(state, keyId)));
}

function closed(holds: ClosedHolds, holdId: string): ClosedHolds {
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
function copy(state: WalletState): { -readonly [K in keyof WalletState]: WalletState[K] } {
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
    limits: state.limits,
    group: state.group,
    escrows: state.escrows,
    escrowed: state.escrowed,
  };
}

/** `next` with `escrowed` brought up to date for the one key an event touched. */
function reescrowed<S extends { -readonly [K in keyof WalletState]: WalletState[K] }>(next: S, state: WalletState, keyId: string | null): S {
  if (keyId === null || !next.escrows.has(keyId)) return next;
  next.escrowed = state.escrowed - escrowLeft(state, keyId) + escrowLeft(next, keyId);
  return next;
}

function originOf(data: Extract<WalletEvent, { type: 'FundsReserved' }>['data']): HoldOrigin {
  const space = data.purpose.indexOf(' ');
  return {
    model: data.model ?? (space < 0 ? '' : data.purpose.slice(space + 1)),
    endpoint: data.endpoint ?? (space < 0 ? data.purpose : data.purpose.slice(0, space)),
    requestId: data.request_id ?? data.hold_id,
    reservedAt: data.at,
  };
}

/** The refusal a reservation of `amount` with this key meets at its spend cap, if any. */
export function spendCapRefusal(state: WalletState, keyId: string | null, spendCap: bigint | null, amount: bigint) {
  if (spendCap === null) return null;
  const usage = usageOf(state, keyId);
  const capLeft = spendCap - usage.spent - usage.held;
  if (amount <= capLeft) return null;
  return {
    code: 'spend_cap_exceeded' as const,
    message: `the key's spend cap of ${formatUsd(spendCap)} USD would be exceeded: ${formatUsd(capLeft < 0n ? 0n : capLeft)} USD of it is left`,
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

export function decide(command: WalletCommand, state: WalletState): WalletDecision {
  if (command.type === 'OpenAccount') {
    if (state.status !== 'none') return refuse('account_exists', `account ${command.accountId} already exists`);
    return accept(
      { type: 'AccountOpened', data: { account_id: command.accountId, name: command.name, at: command.now } },
      { type: 'CreditGranted', data: { grant_id: `signup-${command.accountId}`, amount: SIGNUP_GRANT, reason: 'signup', at: command.now } },
      ...(command.group ? [{ type: 'AccountGroupSet' as const, data: { group: command.group, at: command.now } }] : []),
    );
  }
  if (state.status === 'none') return refuse('account_not_found', 'account not found');

  switch (command.type) {
    case 'TopUp': {
      // A payment webhook retried after a time-out: the same reference is the same top-up.
      const earlier = state.topups.get(command.reference);
      if (earlier && earlier.amount === command.amount) return accept();
      if (earlier)
        return refuse(
          'topup_reference_conflict',
          `the reference ${JSON.stringify(command.reference)} was already used by a top-up of ${formatUsd(earlier.amount)} USD; a new top-up needs a new reference`,
        );
      if (command.amount < MINIMUM_TOPUP)
        return refuse('topup_below_minimum', `the minimum top-up is ${formatUsd(MINIMUM_TOPUP)} USD; got ${formatUsd(command.amount)}`);
      return accept({
        type: 'WalletToppedUp',
        data: { topup_id: command.topupId, amount: command.amount, reference: command.reference, at: command.now },
      });
    }

    case 'Reserve': {
      if (command.amount < 0n) return refuse('invalid_amount', 'a reservation cannot be negative');
      if (state.status !== 'active') return refuse('account_inactive', 'the account is inactive');
      if (state.holds.has(command.holdId) || wasClosed(state, command.holdId))
        return refuse('hold_exists', `hold ${command.holdId} already exists`);
      // An escrow key reserves against its escrow alone: the money was set aside when it was approved.
      if (command.keyId !== null && state.escrows.has(command.keyId)) {
        const escrow = state.escrows.get(command.keyId)!;
        const left = escrowLeft(state, command.keyId);
        if (command.amount > left)
          return refuse(
            'spend_cap_exceeded',
            `the key's spend cap of ${formatUsd(escrow.funded)} USD would be exceeded: ${formatUsd(left)} USD of its escrow is left${escrow.open ? '' : ' (the escrow was returned)'}`,
          );
        return accept(reservation(command));
      }
      const free = available(state);
      if (command.amount > free)
        return refuse(
          'insufficient_funds',
          `insufficient balance: this request needs up to ${formatUsd(command.amount)} USD and ${formatUsd(free < 0n ? 0n : free)} USD is available; top up your account`,
        );
      const capped = spendCapRefusal(state, command.keyId, command.spendCap, command.amount);
      if (capped) return refuse(capped.code, capped.message);
      return accept(reservation(command));
    }

    case 'FundEscrow': {
      const escrow = state.escrows.get(command.keyId);
      // The same approval retried: the escrow is there already.
      if (escrow) return accept();
      if (command.amount <= 0n) return refuse('invalid_amount', 'an escrow must be above 0');
      if (state.status !== 'active') return refuse('account_inactive', 'the account is inactive');
      const free = available(state);
      if (command.amount > free)
        return refuse(
          'insufficient_funds',
          `the enterprise cannot fund this key's escrow: it needs ${formatUsd(command.amount)} USD and ${formatUsd(free < 0n ? 0n : free)} USD is available; top up the enterprise account`,
        );
      return accept({ type: 'EscrowFunded', data: { key_id: command.keyId, amount: command.amount, request_id: command.requestId, at: command.now } });
    }

    case 'ReturnEscrow': {
      const escrow = state.escrows.get(command.keyId);
      if (!escrow) return refuse('escrow_not_found', `key ${command.keyId} has no escrow`);
      if (!escrow.open) return accept();
      return accept({ type: 'EscrowReturned', data: { key_id: command.keyId, amount: escrowLeft(state, command.keyId), at: command.now } });
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
          ...(command.uncharged ? { uncharged: command.uncharged } : {}),
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
        if (value !== null && (!Number.isInteger(value) || value <= 0 || value > INT32_MAX))
          return refuse('invalid_limits', `${name} must be a positive integer up to ${INT32_MAX}, or null (unlimited)`);
      return accept({
        type: 'AccountLimitsSet',
        data: { rpm: command.rpm, concurrency: command.concurrency, at: command.now },
      });

    case 'SetGroup':
      // Binding the group it already has appends nothing.
      if (command.group === state.group) return accept();
      return accept({ type: 'AccountGroupSet', data: { group: command.group, at: command.now } });

    case 'Adjust':
      return adjust(command, state);

    default:
      return assertNever(command);
  }
}

function reservation(command: Extract<WalletCommand, { type: 'Reserve' }>): WalletEvent {
  const { origin } = command;
  return {
    type: 'FundsReserved',
    data: {
      hold_id: command.holdId,
      amount: command.amount,
      key_id: command.keyId,
      purpose: command.purpose,
      expires_at: command.expiresAt,
      at: command.now,
      ...(origin ? { model: origin.model, endpoint: origin.endpoint, request_id: origin.requestId } : {}),
    },
  };
}

function adjust(command: Extract<WalletCommand, { type: 'Adjust' }>, state: WalletState): WalletDecision {
  if (state.adjustments.has(command.reference)) return refuse('adjustment_exists', `adjustment ${command.reference} was already applied to this account`);
  if (command.calls.length === 0) return refuse('invalid_adjustment', 'an adjustment needs at least one call');
  if (command.calls.some((c) => c.oldCost < 0n || c.newCost < 0n)) return refuse('invalid_adjustment', 'a call cannot cost less than 0');
  const parts = Math.ceil(command.calls.length / ADJUSTMENT_PART_CALLS);
  const events: WalletEvent[] = [];
  for (let part = 0; part < parts; part++) {
    const calls = command.calls.slice(part * ADJUSTMENT_PART_CALLS, (part + 1) * ADJUSTMENT_PART_CALLS);
    events.push({
      type: 'WalletAdjusted',
      data: {
        adjustment_id: command.adjustmentId,
        reference: command.reference,
        reason: command.reason,
        model: command.model,
        amount: calls.reduce((sum, c) => sum + c.oldCost - c.newCost, 0n),
        part,
        parts,
        calls: calls.map((c) => ({ request_id: c.requestId, key_id: c.keyId, old_cost: c.oldCost, new_cost: c.newCost })),
        at: command.now,
      },
    });
  }
  return accept(...events);
}

export const walletDecider: Decider<WalletCommand, WalletState, WalletEvent, WalletErrorCode> = {
  initialState: initialWalletState,
  evolve,
  decide,
};
