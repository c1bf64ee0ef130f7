/** Text shaped like a secret key: the gateway's own (`sk-` + 8 + `-` + 64) and any vendor's
 * `sk-…` pasted by mistake. Matched on decoded text, so no encoding hides it. */
const KEY_TEXT = /sk-[A-Za-z0-9_-]{16,}/;

/** Percent-decoding that never throws (a malformed escape stays as it is); `+` is a space, as in
 * the query parser. Enough to see what a parser would see in ASCII names and keys. */
function decoded(component: string): string {
  return component.replace(/\+/g, ' ').replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

const REDACTED = '[redacted]';

function redactedPair(pair: string): string {
  const eq = pair.indexOf('=');
  const name = eq < 0 ? pair : pair.slice(0, eq);
  const value = eq < 0 ? '' : pair.slice(eq + 1);
  const plainName = decoded(name);
  const safeName = KEY_TEXT.test(plainName) ? REDACTED : name;
  if (eq < 0) return safeName;
  // `key` is the credential's own parameter, however its name is encoded (`%6Bey`).
  if (plainName.trim().toLowerCase() === 'key' || KEY_TEXT.test(decoded(value))) return `${safeName}=${REDACTED}`;
  return `${safeName}=${value}`;
}

/**
 * A URL as it may be logged or echoed: the value of every `key` query parameter, and every path
 * segment, query name or value holding key-shaped text, replaced. `?key=` carries a raw API key,
 * and a client may paste a key anywhere; neither must reach a log line.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const safePath = path
    .split('/')
    .map((segment) => (KEY_TEXT.test(decoded(segment)) ? REDACTED : segment))
    .join('/');
  if (q < 0) return safePath;
  return `${safePath}?${url
    .slice(q + 1)
    .split('&')
    .map(redactedPair)
    .join('&')}`;
}

/** The log's redaction (pino's `redact`): a holder's password, in whatever object a log line might carry
 * it (a form body, an error's context), and a stored hash, never reach the log. Nothing logs them today:
 * this is the net under a mistake. */
export const LOG_REDACT = {
  paths: ['password', 'current', 'password_hash', 'passwordHash', '*.password', '*.current', '*.password_hash', '*.passwordHash', 'req.body.password', 'err.body.password'],
  censor: REDACTED,
};
