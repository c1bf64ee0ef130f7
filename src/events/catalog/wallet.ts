import { z } from 'zod';
import { Timestamp, Units, defineEvent, type EventOf } from './codec';

/** The wallet stream of an account: `wallet-{accountId}`. It holds the account's
 * status and limits too, because every money decision needs them at once. */
export const walletStream = (accountId: string) => `wallet-${accountId}`;

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
  z.object({ hold_id: z.string(), hold_amount: Units, captured: Units, released: Units, at: Timestamp }),
);
export const HoldReleased = defineEvent(
  'HoldReleased',
  z.object({ hold_id: z.string(), amount: Units, reason: z.string(), at: Timestamp }),
);
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
] as const;

export type WalletEvent = EventOf<(typeof walletEvents)[number]>;
