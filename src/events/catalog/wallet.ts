import { z } from 'zod';
import { ChannelGroup, Int32, Timestamp, Units, defineEvent, type EventOf } from './codec';

/** The wallet stream of an account: `wallet-{accountId}`. It holds the account's
 * status and limits too, because every money decision needs them at once. */
export const walletStream = (accountId: string) => `wallet-${accountId}`;

/** The outcome of one external call, carried by the event that ends its hold (or by
 * CallRejected): the call log is a projection of these. Failover attempts are folded in. */
export const CallRecord = z.object({
  request_id: z.string(),
  key_id: z.string().nullable(),
  model: z.string(),
  endpoint: z.string(),
  status: z.enum(['success', 'error', 'interrupted', 'rejected']),
  error_code: z.string().nullable(),
  error_message: z.string().nullable(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cached_tokens: z.number().int().nonnegative(),
  /** Input tokens written to the cache (part of input_tokens, billed at the model's cache-write
   * multiplier): kept so that a re-rate prices them as the call was. Absent: none. */
  cache_write_tokens: z.number().int().nonnegative().optional(),
  /** The part of cache_write_tokens written for 1 hour (billed at the model's 1-hour write multiplier; the rest
   * were 5-minute writes). Absent: none, as on every record from before lifetimes were told apart. */
  cache_write_1h_tokens: z.number().int().nonnegative().optional(),
  unit_count: Int32.nonnegative().nullable(),
  unit_type: z.string().nullable(),
  latency_ms: Int32.nonnegative(),
  attempts_count: Int32.nonnegative(),
  channel_id: z.string().nullable(),
  task_id: z.string().nullable(),
  submitted_at: Timestamp,
  /** The enterprise agent whose key made the call. Absent: an ordinary key. */
  agent_id: z.string().optional(),
  result_urls: z.array(z.string()),
  result_expires_at: Timestamp.nullable(),
  /** The part of the captured cost that is built-in tool fees (nano-dollars, a decimal string);
   * the calls are `unit_count` of `unit_type` (e.g. `web_search_call`). Absent: none. */
  tool_fee: z.string().regex(/^\d+$/).optional(),
  /** The model the client asked for, when one of its fallbacks answered (`model` is the one that answered
   * and was billed). Absent: the model asked for answered, or none did. */
  requested_model: z.string().optional(),
  /** The promotional discount multiplier the token prices were billed at. Absent: none. */
  discount: z.string().regex(/^\d+(\.\d+)?$/).optional(),
});
export type CallRecord = z.output<typeof CallRecord>;

/** A call record with nothing measured: no tokens, units, latency, attempts, channel, task or links
 * (a call that never reached an upstream, or one a test writes); `fields` give the rest. */
export function unmeasuredCall(
  fields: Pick<CallRecord, 'request_id' | 'key_id' | 'model' | 'endpoint' | 'status' | 'submitted_at'> & Partial<CallRecord>,
): CallRecord {
  return {
    error_code: null,
    error_message: null,
    input_tokens: 0,
    output_tokens: 0,
    cached_tokens: 0,
    unit_count: null,
    unit_type: null,
    latency_ms: 0,
    attempts_count: 0,
    channel_id: null,
    task_id: null,
    result_urls: [],
    result_expires_at: null,
    ...fields,
  };
}

export const AccountOpened = defineEvent(
  'AccountOpened',
  z.object({ account_id: z.string(), name: z.string(), at: Timestamp }),
);
export const CreditGranted = defineEvent(
  'CreditGranted',
  z.object({ grant_id: z.string(), amount: Units, reason: z.string(), at: Timestamp }),
);
export const WalletToppedUp = defineEvent(
  'WalletToppedUp',
  z.object({ topup_id: z.string(), amount: Units, reference: z.string(), at: Timestamp }),
);
export const FundsReserved = defineEvent(
  'FundsReserved',
  z.object({
    hold_id: z.string(),
    amount: Units,
    key_id: z.string().nullable(),
    purpose: z.string(),
    expires_at: Timestamp,
    at: Timestamp,
    /** The call the hold is for (optional: events before these fields read without them), so
     * that a hold released at its deadline still gets its call-log row. */
    model: z.string().optional(),
    endpoint: z.string().optional(),
    request_id: z.string().optional(),
  }),
);
export const HoldSettled = defineEvent(
  'HoldSettled',
  z.object({
    hold_id: z.string(),
    hold_amount: Units,
    captured: Units,
    released: Units,
    call: CallRecord.optional(),
    /** What the call's price came to beyond its capture bound (a chat call: 4 × its hold,
     * src/upstream/capture.ts), not charged: recorded for the operator. Absent: nothing was left out. */
    uncharged: Units.optional(),
    at: Timestamp,
  }),
);
export const HoldReleased = defineEvent(
  'HoldReleased',
  z.object({ hold_id: z.string(), amount: Units, reason: z.string(), call: CallRecord.optional(), at: Timestamp }),
);
export const CallRejected = defineEvent('CallRejected', z.object({ call: CallRecord, at: Timestamp }));
export const AccountDeactivated = defineEvent('AccountDeactivated', z.object({ reason: z.string(), at: Timestamp }));
export const AccountReactivated = defineEvent('AccountReactivated', z.object({ at: Timestamp }));
export const AccountLimitsSet = defineEvent(
  'AccountLimitsSet',
  z.object({
    rpm: Int32.positive().nullable(),
    concurrency: Int32.positive().nullable(),
    at: Timestamp,
  }),
);
/** The channel group the account's calls are routed to (null: none, every channel); a key's own
 * group wins over it (src/channels/groups.ts). */
export const AccountGroupSet = defineEvent('AccountGroupSet', z.object({ group: ChannelGroup.nullable(), at: Timestamp }));

/** One re-rated call inside an adjustment: what it cost, what it costs at the new price. */
export const AdjustedCall = z.object({
  request_id: z.string(),
  key_id: z.string().nullable(),
  old_cost: Units,
  new_cost: Units,
});

/**
 * A correction of past charges (a re-rate), never a rewrite of them: `amount` is added to the
 * balance (positive = credit back, negative = further debit) and equals Σ(old_cost − new_cost)
 * over `calls`. A re-rate of many calls is split into parts of at most ADJUSTMENT_PART_CALLS
 * calls, appended together; `reference` names the operator's run and makes it idempotent.
 */
export const WalletAdjusted = defineEvent(
  'WalletAdjusted',
  z.object({
    adjustment_id: z.string(),
    reference: z.string(),
    reason: z.string(),
    model: z.string(),
    amount: Units,
    part: z.number().int().nonnegative(),
    parts: z.number().int().positive(),
    calls: z.array(AdjustedCall),
    at: Timestamp,
  }),
);

/**
 * Money taken back from the wallet by its payment provider (a refund, a lost dispute): `amount` leaves
 * the balance, which may go negative (the next reservation is then refused). `reference` names what took
 * it (`refund:{payment intent}`, `dispute:{dispute}`) and `total` how much that reference has taken in all,
 * this debit included: the provider reports refunds cumulatively, so a debit is the difference.
 */
export const WalletDebited = defineEvent(
  'WalletDebited',
  z.object({ debit_id: z.string(), reference: z.string(), amount: Units, total: Units, reason: z.string(), at: Timestamp }),
);

/** An approved agent key's cap set aside from the enterprise's available balance: the key's
 * calls reserve against it alone (see docs/agents.md, "Escrow"). One per key. */
export const EscrowFunded = defineEvent(
  'EscrowFunded',
  z.object({ key_id: z.string(), amount: Units, request_id: z.string(), at: Timestamp }),
);
/** The escrow closed (its key revoked or deleted): what was left of it, back in the available balance. */
export const EscrowReturned = defineEvent('EscrowReturned', z.object({ key_id: z.string(), amount: Units, at: Timestamp }));

export const walletEvents = [
  AccountOpened,
  CreditGranted,
  WalletToppedUp,
  FundsReserved,
  HoldSettled,
  HoldReleased,
  AccountDeactivated,
  AccountReactivated,
  AccountLimitsSet,
  AccountGroupSet,
  CallRejected,
  WalletAdjusted,
  EscrowFunded,
  EscrowReturned,
  WalletDebited,
] as const;

export type WalletEvent = EventOf<(typeof walletEvents)[number]>;
