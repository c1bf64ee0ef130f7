import type { CallRecord } from '../events/catalog';
import type { Hold } from './wallet/decider';

/** The call-log code of a call whose hold was released at its deadline: nobody settled it, so the
 * gateway instance serving it stopped (crash, kill, lost connection to the database) mid-call. */
export const GATEWAY_INTERRUPTED = 'gateway_interrupted';

/** The row of a call that died with its gateway: an `error` at cost 0 (nothing is billed), with
 * the model, endpoint, key and request id its reservation named. */
export function sweptCall(hold: Hold): CallRecord {
  const { origin } = hold;
  return {
    request_id: origin.requestId,
    key_id: hold.keyId,
    model: origin.model,
    endpoint: origin.endpoint,
    status: 'error',
    error_code: GATEWAY_INTERRUPTED,
    error_message: 'the call never finished: the gateway serving it stopped before settling it; its hold was released at its deadline and nothing was billed',
    input_tokens: 0,
    output_tokens: 0,
    cached_tokens: 0,
    unit_count: null,
    unit_type: null,
    // Unknown: the call never answered. submitted_at (its reservation) and the row's time (the
    // release) bound it.
    latency_ms: 0,
    attempts_count: 0,
    channel_id: null,
    task_id: null,
    submitted_at: origin.reservedAt,
    result_urls: [],
    result_expires_at: null,
  };
}
