import { z } from 'zod';
import { Timestamp, Units, defineEvent, type EventOf } from './codec';

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
  unit_count: z.number().int().nonnegative().nullable(),
  unit_type: z.string().nullable(),
  latency_ms: z.number().int().nonnegative(),
  attempts_count: z.number().int().nonnegative(),
  channel_id: z.string().nullable(),
  task_id: z.string().nullable(),
  submitted_at: Timestamp,
  result_urls: z.array(z.string()),
  result_expires_at: Timestamp.nullable(),
  /** The part of the captured cost that is built-in tool fees (nano-dollars, a decimal string);
   * the calls are `unit_count` of `unit_type` (e.g. `web_search_call`). Absent: none. */
  tool_fee: z.string().regex(/^\d+$/).optional(),
  /** The promotional discount multiplier the token prices were billed at. Absent: none. */
  discount: z.string().regex(/^\d+(\.\d+)?$/).optional(),
});
export type CallRecord = z.output<typeof CallRecord>;

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
  }),
);
export const HoldSettled = defineEvent(
  'HoldSettled',
  z.object({ hold_id: z.string(), hold_amount: Units, captured: Units, released: Units, call: CallRecord.optional(), at: Timestamp }),
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
    rpm: z.number().int().positive().nullable(),
    concurrency: z.number().int().positive().nullable(),
    at: Timestamp,
  }),
);

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
  CallRejected,
] as const;

export type WalletEvent = EventOf<(typeof walletEvents)[number]>;
