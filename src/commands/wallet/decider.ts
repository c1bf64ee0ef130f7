import { INT32_MAX, type CallRecord, type WalletEvent } from '../../events/catalog';
import { formatUsd, parseUsd } from '../../money/usd';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';
import { available, escrowLeft, evolve, initialWalletState, usageOf, wasClosed, type WalletState } from './state';

export const SIGNUP_GRANT = parseUsd('40.44');
export const MINIMUM_TOPUP = parseUsd('134.8');

export type WalletCommand =
  /** `group`: the channel group it is bound to from the start (absent: none). `trialGrant`: the
   * trial credit granted with the opening (the admin API's accounts: SIGNUP_GRANT), or null when it
   * waits for GrantTrialCredit (a holder's own sign-up, once the email address is verified). */
  | { type: 'OpenAccount'; accountId: string; name: string; group?: string | null; trialGrant: bigint | null; now: number }
  /** The spec's trial credit, at most once per account whatever the number of calls (its grant id is
   * `signup-{account}`, the same as an opening's grant). */
  | { type: 'GrantTrialCredit'; amount: bigint; now: number }
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
  /** The payment provider took money back: `total` is what `reference` has taken in all so far
   * (cumulative, as a provider reports refunds); the debit is what it has not taken yet. */
  | { type: 'Debit'; debitId: string; reference: string; total: bigint; reason: string; now: number }
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

/** The trial grant's id: one per account, so a replay or a second verification grants nothing. */
export const trialGrantId = (accountId: string) => `signup-${accountId}`;

function trialGrant(accountId: string, amount: bigint, now: number): WalletEvent {
  return { type: 'CreditGranted', data: { grant_id: trialGrantId(accountId), amount, reason: 'signup', at: now } };
}

export function decide(command: WalletCommand, state: WalletState): WalletDecision {
  if (command.type === 'OpenAccount') {
    if (state.status !== 'none') return refuse('account_exists', `account ${command.accountId} already exists`);
    if (command.trialGrant !== null && command.trialGrant <= 0n) return refuse('invalid_amount', 'a trial grant must be above 0');
    return accept(
      { type: 'AccountOpened', data: { account_id: command.accountId, name: command.name, at: command.now } },
      ...(command.trialGrant !== null ? [trialGrant(command.accountId, command.trialGrant, command.now)] : []),
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

    case 'GrantTrialCredit':
      // Granted already (at the opening, or by an earlier verification): nothing more, ever.
      if (state.trialGranted) return accept();
      if (command.amount <= 0n) return refuse('invalid_amount', 'a trial grant must be above 0');
      if (state.status !== 'active') return refuse('account_inactive', 'the account is inactive');
      return accept(trialGrant(state.accountId, command.amount, command.now));

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

    case 'Debit': {
      // Never refused for lack of funds: the money has left already; the balance may go negative.
      if (command.total < 0n) return refuse('invalid_amount', 'a debit cannot be negative');
      const taken = state.debits.get(command.reference) ?? 0n;
      // A delivery seen before, or one older than the last seen (a smaller cumulative total): nothing more to take.
      if (command.total <= taken) return accept();
      return accept({
        type: 'WalletDebited',
        data: { debit_id: command.debitId, reference: command.reference, amount: command.total - taken, total: command.total, reason: command.reason, at: command.now },
      });
    }

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
