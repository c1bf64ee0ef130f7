/** The spec's bounds on an `Idempotency-Key`: 1-200 characters. */
export const MAX_KEY_LENGTH = 200;

export type KeyCheck =
  | { readonly kind: 'absent' }
  | { readonly kind: 'valid'; readonly key: string }
  | { readonly kind: 'invalid'; readonly message: string };

// Printable ASCII without the space (0x21-0x7E): a key with whitespace, control or
// non-ASCII characters is refused rather than normalised, so two spellings never meet.
const PRINTABLE = /^[\x21-\x7e]+$/;

/**
 * Reads the header as Node hands it over. Node joins a repeated custom header with
 * ", ", so two `Idempotency-Key` headers fail on the space: the client meant one intent.
 */
export function checkIdempotencyKey(header: string | readonly string[] | undefined): KeyCheck {
  if (header === undefined) return { kind: 'absent' };
  const value = typeof header === 'string' ? header : header.join(', ');
  if (value.length === 0) return invalid('is empty');
  if (value.length > MAX_KEY_LENGTH) return invalid(`is ${value.length} characters long; the maximum is ${MAX_KEY_LENGTH}`);
  if (!PRINTABLE.test(value)) return invalid('contains whitespace, a control character or a non-ASCII character');
  return { kind: 'valid', key: value };
}

function invalid(problem: string): KeyCheck {
  return {
    kind: 'invalid',
    message: `Invalid Idempotency-Key: the value ${problem}. Use 1-${MAX_KEY_LENGTH} printable ASCII characters (0x21-0x7E, no spaces), one key per submission intent.`,
  };
}
