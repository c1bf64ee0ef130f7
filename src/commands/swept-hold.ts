import { unmeasuredCall, type CallRecord } from '../events/catalog';
import type { Hold } from './wallet/state';

/** The call-log code of a call whose hold was released at its deadline: nobody settled it, so the
 * gateway instance serving it stopped (crash, kill, lost connection to the database) mid-call. */
export const GATEWAY_INTERRUPTED = 'gateway_interrupted';

/** The row of a call that died with its gateway: an `error` at cost 0 (nothing is billed), with
 * the model, endpoint, key and request id its reservation named. */
export function sweptCall(hold: Hold): CallRecord {
  const { origin } = hold;
  // Latency unknown: the call never answered. submitted_at (its reservation) and the row's time
  // (the release) bound it.
  return unmeasuredCall({
    request_id: origin.requestId,
    key_id: hold.keyId,
    model: origin.model,
    endpoint: origin.endpoint,
    status: 'error',
    error_code: GATEWAY_INTERRUPTED,
    error_message: 'the call never finished: the gateway serving it stopped before settling it; its hold was released at its deadline and nothing was billed',
    submitted_at: origin.reservedAt,
  });
}
