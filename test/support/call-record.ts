import { unmeasuredCall, type CallRecord } from '../../src/events/catalog';

/** A rejected call's record as tests write it straight to the ledger: every field at its empty
 * value, then `fields`. */
export function rejectedCall(fields: Partial<CallRecord> & Pick<CallRecord, 'request_id'>): CallRecord {
  return unmeasuredCall({ key_id: null, model: 'chat-model', endpoint: 'chat-completions', status: 'rejected', submitted_at: 1, ...fields });
}
