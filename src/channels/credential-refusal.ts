import { isObject, tryJson } from '../upstream/json';
import type { Failure } from '../upstream/upstream-call';

/**
 * Whether an upstream's error answer refuses the caller's credentials upstream, which are the channel's (the
 * client's key never leaves the gateway): a 401 or 403 from every vendor, and Gemini's own way of refusing a
 * bad or revoked API key, a 400 (issue 31):
 *
 *     {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
 *                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com", …}]}}
 *
 * (Gemini's OpenAI-compatible endpoint sends the same object inside a one-element array). Without this, that
 * 400 was passed to the tenant as the tenant's own error, about the operator's key, and the channel was never
 * probed, so never disabled nor healed. Only that exact shape counts: its `ErrorInfo` reason, or a message
 * that begins with Google's words (a 400 that merely quotes them further on, e.g. echoing a prompt, is the
 * caller's). A wrong match costs one failover and one probe, which then finds the key fine.
 */
export function isCredentialRefusal(failure: Extract<Failure, { kind: 'status' }>): boolean {
  if (failure.status === 401 || failure.status === 403) return true;
  return failure.status === 400 && isGoogleKeyInvalid(failure.body);
}

/** Google's reason for an API key it does not accept (google.rpc.ErrorInfo). */
export const GOOGLE_KEY_INVALID_REASON = 'API_KEY_INVALID';
const GOOGLE_KEY_INVALID_MESSAGE = 'API key not valid';

function isGoogleKeyInvalid(body: string): boolean {
  // Most 400s are the caller's: parsed only when Google's words are in them at all.
  if (!body.includes(GOOGLE_KEY_INVALID_REASON) && !body.includes(GOOGLE_KEY_INVALID_MESSAGE)) return false;
  const json = tryJson(body);
  const answer = Array.isArray(json) && json.length === 1 ? json[0] : json;
  const error = isObject(answer) ? answer.error : undefined;
  if (!isObject(error)) return false;
  if (error.status !== undefined && error.status !== 'INVALID_ARGUMENT') return false;
  const details = Array.isArray(error.details) ? error.details : [];
  const reason = details.some((d) => isObject(d) && d.reason === GOOGLE_KEY_INVALID_REASON && (d['@type'] === undefined || (typeof d['@type'] === 'string' && d['@type'].endsWith('google.rpc.ErrorInfo'))));
  return reason || (typeof error.message === 'string' && error.message.startsWith(GOOGLE_KEY_INVALID_MESSAGE));
}
