/**
 * What went wrong with a call, in the account holder's words. The call log keeps the gateway's own
 * message (operators read it); a holder is told what happened and what to do, never an operator's
 * setting or variable.
 */

const HOLDER_WORDS: Readonly<Record<string, string>> = {
  gateway_shutting_down:
    'The gateway was restarting and had to end this call before the answer was complete; the receipt below shows what was charged. Send the request again.',
  client_disconnected: 'Your app closed the connection before the answer was complete.',
  client_timeout: 'Your app stopped reading the answer, so the gateway ended the call.',
  upstream_timeout: 'The model provider took too long to answer, so the gateway ended the call.',
};

/** An operator's setting name (`SHUTDOWN_GRACE_S`), in parentheses or bare. */
const SETTING_NAME = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/;

/** The holder's sentence for a call's error code and logged message. */
export function holderErrorText(code: string, message: string | null): string {
  const known = HOLDER_WORDS[code];
  if (known) return known;
  const text = (message ?? '')
    .replace(/\s*\([^()]*\)/g, (part) => (SETTING_NAME.test(part) ? '' : part))
    .replace(new RegExp(SETTING_NAME.source, 'g'), 'a gateway setting')
    .trim();
  return text === '' ? 'The call did not complete.' : `${text[0]!.toUpperCase()}${text.slice(1)}.`.replace(/\.\.$/, '.');
}
