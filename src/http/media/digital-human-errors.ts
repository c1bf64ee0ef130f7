import { GatewayError, type ErrorCode } from '../errors';

// Errors rule 8: the digital-human endpoints (and the clip SKUs, which the spec lists with them) answer
// an unknown model with 404 and a model the key may not use with 403, where the main table says 400.
// The code and the body's `type` stay the table's: only the status differs, "as stated".

const RULE_EIGHT_STATUS: Partial<Record<ErrorCode, number>> = { model_not_found: 404, model_not_allowed: 403 };

/** An error as an endpoint under rule 8 answers it. */
export function digitalHumanError(error: GatewayError): GatewayError {
  const status = RULE_EIGHT_STATUS[error.code];
  return status === undefined || status === error.status ? error : new GatewayError(error.code, error.message, error.headers, status);
}

/** A `reject` (a rejected call-log row, then the error thrown) whose error follows rule 8. */
export function rejectingByRuleEight(reject: (code: ErrorCode, message: string) => never): (code: ErrorCode, message: string) => never {
  return (code, message) => {
    try {
      return reject(code, message);
    } catch (error) {
      throw error instanceof GatewayError ? digitalHumanError(error) : error;
    }
  };
}
