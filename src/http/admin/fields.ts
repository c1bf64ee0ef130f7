/** What the accounts and keys routes of the admin API share: bounded names and amounts, the route
 * doc helper, the account lookup, and the answer for a stream of the log that cannot be read. */
import { z } from 'zod';
import type { Ledger } from '../../commands/ledger';
import { UsdString } from '../../config/schema';
import type { UnreadableEventError } from '../../events/catalog';
import type { Position } from '../../events/store/port';
import { parseUsd } from '../../money/usd';
import type { RouteDoc } from '../openapi/route-doc';
import { AdminError } from './admin-error';

/** Waits until the read models have applied a command's events (the runner's `waitFor`). */
export type Settled = (position: Position | null) => Promise<void>;

export const Timestamp = z.number().int().nonnegative();
/** Names the operator (or a console user) chooses are stored in events and rows and shown in
 * every list: longer ones are refused, not cut (docs/operations.md, "Bounded texts"). */
export const NAME_MAX = 200;
/** The largest amount one admin command moves or caps: a billion USD. The ledger holds ±9.2 billion
 * (Postgres bigint of nano-USD); an amount past this is a typo, refused with 400 rather than
 * refused by the log's append check with a 500. */
export const MAX_ADMIN_AMOUNT_USD = '1000000000';
export const AdminAmount = UsdString.refine((v) => parseUsd(v) <= parseUsd(MAX_ADMIN_AMOUNT_USD), { message: `at most ${MAX_ADMIN_AMOUNT_USD} USD` });

/** The admin API's word for a stream of the log that cannot be read: the event and why. */
export const unreadable = (error: UnreadableEventError) => ({
  code: 'account_unavailable',
  message: `${error.message}; see gateway ledger verify --parked`,
});

export const NO_ACCOUNT = { 404: 'No such account: `account_not_found`.' };

export const adminDoc = (tag: 'admin-accounts' | 'admin-keys', operationId: string, summary: string, responses: RouteDoc['responses'], extra: Partial<RouteDoc> = {}): RouteDoc => ({
  operationId,
  summary,
  tags: [tag],
  responses,
  ...extra,
});

export async function existingAccount(ledger: Ledger, accountId: string) {
  const state = await ledger.wallet(accountId);
  if (state.status === 'none') throw new AdminError(404, 'account_not_found', `account ${accountId} not found`);
  return state;
}
