import { GatewayError } from '../../errors';
import type { EndpointStatuses } from '../../billable-call';

// Errors rule 8: the digital-human endpoints (and the clip SKUs, which the spec lists with them) answer
// an unknown model with 404 and a model the key may not use with 403, where the main table says 400.
// The code and the body's `type` stay the table's: only the status differs, "as stated".

export const RULE_EIGHT_STATUS: EndpointStatuses = { model_not_found: 404, model_not_allowed: 403 };

/** An error as an endpoint under rule 8 answers it (an Idempotency-Key replay's refusal; rejected calls
 * get the status from `beginCall`). */
export function digitalHumanError(error: GatewayError): GatewayError {
  const status = RULE_EIGHT_STATUS[error.code];
  return status === undefined || status === error.status ? error : new GatewayError(error.code, error.message, error.headers, status);
}
