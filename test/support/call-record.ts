import type { CallRecord } from '../../src/events/catalog';

/** A rejected call's record as tests write it straight to the ledger: every field at its empty
 * value, then `fields`. */
export function rejectedCall(fields: Partial<CallRecord> & Pick<CallRecord, 'request_id'>): CallRecord {
  return {
    key_id: null,
    model: 'chat-model',
    endpoint: 'chat-completions',
    status: 'rejected',
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
    submitted_at: 1,
    result_urls: [],
    result_expires_at: null,
    ...fields,
  };
}
