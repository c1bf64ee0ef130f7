import type { Ledger } from '../commands/ledger';
import type { CallRecord } from '../events/catalog';
import { callRecord, type CallFacts } from './billable-call';
import { failureOf } from './errors';
import { traceSettlement } from '../tracing/spans';

/**
 * The hold of a call that failed in the gateway itself (an exception after the reservation,
 * before a settlement or release was written): released now, with the call's `error` row, instead
 * of staying open until the sweeper. Nothing is billed for a call the gateway could not carry
 * out. A release of a hold already closed is refused by the wallet and changes nothing, so this
 * is safe whatever the failed code had done. Never rejects: the failure itself is what the caller
 * reports.
 */
export async function releaseUnsettled(ledger: Ledger, facts: CallFacts, holdId: string, failure: unknown, fields: Partial<CallRecord> = {}): Promise<void> {
  const request = facts.request;
  const error = failureOf(failure, request.id);
  try {
    const record = callRecord(facts, { ...fields, status: 'error', error_code: error.code, error_message: error.message });
    const released = await traceSettlement(request, { holdId, record }, () => ledger.release(request.caller!.accountId, holdId, 'gateway error', record));
    if (!released.ok && released.error.code !== 'hold_not_open') request.log.error({ holdId, error: released.error }, 'could not release the hold of a failed call');
  } catch (releaseFailure) {
    request.log.error({ err: releaseFailure, holdId }, 'could not release the hold of a failed call; the hold sweeper will');
  }
}

/**
 * The release of a call no channel answered (or whose client left first): nothing is billed, and the row
 * says why (`code`, `message`: the failed ladder's). The one release of every synchronous call's failed
 * ladder (chat, images, speech); a task's hold is released with its task's end instead.
 */
export async function releaseFailed(ledger: Ledger, facts: CallFacts, holdId: string, code: string, message: string, fields: Partial<CallRecord> = {}): Promise<void> {
  const request = facts.request;
  const record = callRecord(facts, { status: 'error', error_code: code, error_message: message, ...fields });
  await traceSettlement(request, { holdId, record }, () => ledger.release(request.caller!.accountId, holdId, 'upstream failed', record));
}
