import type { ProjectedEvent } from '../projection';

/** What a batch does to one account row: sums to add, and the last value of each field it sets. */
export interface AccountChange {
  readonly accountId: string;
  /** Set when the batch opens the account: the row is inserted rather than updated. */
  opened: { name: string; at: number } | null;
  balance: bigint;
  held: bigint;
  credited: bigint;
  captured: bigint;
  /** Net debits of adjustments (re-rates). */
  adjusted: bigint;
  /** Taken back by the payment provider (refunds, lost disputes). */
  debited: bigint;
  status: 'active' | 'inactive' | null;
  limits: { rpm: number | null; concurrency: number | null } | null;
  /** Set when the batch binds or unbinds the account's channel group. */
  group: { value: string | null } | null;
  updatedAt: number;
}

/** A hold's row as the batch leaves it. `keyId` is undefined when the hold was reserved
 * in an earlier batch: only its row in `holds` knows the key. */
export interface HoldChange {
  readonly accountId: string;
  readonly holdId: string;
  /** The whole row, when the batch reserves the hold. */
  reserved: { keyId: string | null; purpose: string; amount: bigint; expiresAt: number; createdAt: number } | null;
  status: 'open' | 'settled' | 'released';
  captured: bigint | null;
  closedAt: number | null;
  /** What the batch adds to the key's spend, once the key is known. */
  spent: bigint;
  keyHeld: bigint;
}

export interface AccountsChanges {
  readonly accounts: Map<string, AccountChange>;
  readonly holds: Map<string, HoldChange>;
  /** What adjustments add to each key's spend (outside any hold). */
  readonly keySpend: Map<string, { accountId: string; spent: bigint }>;
}

export const holdKey = (accountId: string, holdId: string) => `${accountId}\u0000${holdId}`;

/** Folds a batch of wallet events into per-row changes, in log order, so the writes
 * are a constant number of multi-row statements however many events the batch has. */
export function foldAccounts(items: readonly ProjectedEvent[]): AccountsChanges {
  const accounts = new Map<string, AccountChange>();
  const holds = new Map<string, HoldChange>();
  const keySpend = new Map<string, { accountId: string; spent: bigint }>();
  const account = (accountId: string, at: number): AccountChange => {
    let change = accounts.get(accountId);
    if (!change) {
      change = { accountId, opened: null, balance: 0n, held: 0n, credited: 0n, captured: 0n, adjusted: 0n, debited: 0n, status: null, limits: null, group: null, updatedAt: at };
      accounts.set(accountId, change);
    }
    change.updatedAt = at;
    return change;
  };
  const hold = (accountId: string, holdId: string): HoldChange => {
    const key = holdKey(accountId, holdId);
    let change = holds.get(key);
    if (!change) {
      change = { accountId, holdId, reserved: null, status: 'open', captured: null, closedAt: null, spent: 0n, keyHeld: 0n };
      holds.set(key, change);
    }
    return change;
  };

  for (const { event, recorded } of items) {
    const accountId = recorded.streamId.slice('wallet-'.length);
    switch (event.type) {
      case 'AccountOpened':
        account(accountId, event.data.at).opened = { name: event.data.name, at: event.data.at };
        break;
      case 'CreditGranted':
      case 'WalletToppedUp': {
        const a = account(accountId, event.data.at);
        a.balance += event.data.amount;
        a.credited += event.data.amount;
        break;
      }
      case 'FundsReserved': {
        const { hold_id, amount, key_id, purpose, expires_at, at } = event.data;
        account(accountId, at).held += amount;
        const h = hold(accountId, hold_id);
        h.reserved = { keyId: key_id, purpose, amount, expiresAt: expires_at, createdAt: at };
        h.keyHeld += amount;
        break;
      }
      case 'HoldSettled': {
        const { hold_id, hold_amount, captured, at } = event.data;
        const a = account(accountId, at);
        a.balance -= captured;
        a.held -= hold_amount;
        a.captured += captured;
        const h = hold(accountId, hold_id);
        h.status = 'settled';
        h.captured = captured;
        h.closedAt = at;
        h.spent += captured;
        h.keyHeld -= hold_amount;
        break;
      }
      case 'HoldReleased': {
        const { hold_id, amount, at } = event.data;
        account(accountId, at).held -= amount;
        const h = hold(accountId, hold_id);
        h.status = 'released';
        h.captured = 0n;
        h.closedAt = at;
        h.keyHeld -= amount;
        break;
      }
      case 'AccountDeactivated':
      case 'AccountReactivated':
        account(accountId, event.data.at).status = event.type === 'AccountDeactivated' ? 'inactive' : 'active';
        break;
      case 'AccountLimitsSet':
        account(accountId, event.data.at).limits = { rpm: event.data.rpm, concurrency: event.data.concurrency };
        break;
      case 'AccountGroupSet':
        account(accountId, event.data.at).group = { value: event.data.group };
        break;
      case 'WalletDebited': {
        const a = account(accountId, event.data.at);
        a.balance -= event.data.amount;
        a.debited += event.data.amount;
        break;
      }
      case 'WalletAdjusted': {
        const a = account(accountId, event.data.at);
        a.balance += event.data.amount;
        a.adjusted -= event.data.amount;
        for (const call of event.data.calls) {
          if (call.key_id === null) continue;
          const k = keySpend.get(call.key_id) ?? { accountId, spent: 0n };
          k.spent += call.new_cost - call.old_cost;
          keySpend.set(call.key_id, k);
        }
        break;
      }
      default:
        break;
    }
  }
  return { accounts, holds, keySpend };
}
