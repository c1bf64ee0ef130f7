import { INT32_MAX, type CallRecord, type TaskBilling } from '../../events/catalog';
import { isFinished, type TaskState } from './decider';

/**
 * How a finished task's hold is closed on its wallet: a settlement of what the task was charged,
 * or a release in full (failed, expired, cancelled, refused, or nothing delivered). The task stream
 * says what the task owes; the wallet decides once whether the hold is still open, so running this
 * again after a crash, a retried job or a sweep of the hold changes nothing: a hold ends once.
 */
export type Closing = { readonly type: 'Settle'; readonly amount: bigint } | { readonly type: 'Release'; readonly reason: string };

export function closingOf(state: TaskState): Closing | null {
  if (!isFinished(state.phase)) return null;
  if (state.phase === 'succeeded' && state.charge > 0n) return { type: 'Settle', amount: state.charge };
  return { type: 'Release', reason: state.phase === 'succeeded' ? 'task delivered nothing' : `task ${state.phase}` };
}

/** The call log's `unit_type` of a billing unit (seconds are billed by the millisecond). */
export function unitTypeOf(billing: TaskBilling): string {
  return billing.unit === 'millisecond' ? 'second' : billing.unit;
}

/** The task's call-log row, written with the event that closes its hold: one row per task. */
export function taskCall(state: TaskState): CallRecord {
  const succeeded = state.phase === 'succeeded';
  const latencyMs = Math.min(INT32_MAX, Math.max(0, ((state.completedAt ?? state.createdAt) - state.createdAt) * 1000));
  return {
    request_id: state.requestId,
    key_id: state.keyId,
    model: state.model,
    endpoint: state.endpoint,
    status: succeeded ? 'success' : 'error',
    error_code: succeeded ? null : (state.error?.code ?? null),
    error_message: succeeded ? null : (state.error?.message ?? null),
    input_tokens: succeeded ? (state.run?.inputTokens ?? 0) : 0,
    output_tokens: succeeded ? (state.billing.unit === 'token' ? state.units : (state.run?.outputTokens ?? 0)) : 0,
    cached_tokens: 0,
    unit_count: succeeded ? state.unitCount : 0,
    unit_type: unitTypeOf(state.billing),
    latency_ms: latencyMs,
    attempts_count: state.attempts,
    channel_id: state.upstream?.channelId ?? state.run?.channelId ?? null,
    task_id: state.taskId,
    submitted_at: state.createdAt,
    result_urls: succeeded ? [...state.resultUrls] : [],
    result_expires_at: succeeded ? state.resultExpiresAt : null,
  };
}
