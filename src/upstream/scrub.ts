import type { ChannelConfig } from '../config/schema';

/**
 * An upstream's error text, as it may leave the gateway: without the channel's credentials, nor any text
 * shaped like a key. Upstreams echo requests back in their errors (the headers, the URL with its query),
 * and what they say is passed to clients (Errors rule 5), kept in call-log rows, in a channel's
 * `last_error` and in logs; none of those may hold the key the operator pays with. Applied where the
 * upstream's text enters the gateway (`statusFailure`, a task's `error.message`, a stream's error frame),
 * so that nothing further on has to remember it.
 */
export type Scrub = (text: string) => string;

export const REDACTED = '[REDACTED]';

/** What replaces a whole text whose secrets could not be cut out one by one (a secret that the marker
 * itself would complete): nothing of it is kept. */
export const WITHHELD = 'the upstream message was withheld: it held credentials';

/** A value of the config shorter than this is no secret worth the name, and cutting it out of every
 * message would maim them (`api-version: 1`); the key and a password count from `MIN_KEY`. */
export const MIN_VALUE = 6;
export const MIN_KEY = 4;

/** The parts of a channel's config that may hold credentials. */
export type ChannelSecretSource = Pick<ChannelConfig, 'api_key' | 'base_url'> & Partial<Pick<ChannelConfig, 'headers' | 'query' | 'proxy'>>;

const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/** A URL's user-info (both parts, as written and decoded) and its query values. */
function urlSecrets(url: string | undefined): { keys: string[]; values: string[] } {
  if (!url) return { keys: [], values: [] };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { keys: [], values: [] };
  }
  const keys = [parsed.username, parsed.password].flatMap((part) => [part, decoded(part)]);
  return { keys, values: [...parsed.searchParams.values()] };
}

/**
 * Every text of the channel's config that is, or may be, a credential: the key, the values of the extra
 * headers and of the added query (the config does not say which of them are secret: all are treated as
 * such), the user-info of the proxy and of the base URL, and the query of the base URL. Each also in the
 * forms an echo may take (JSON-escaped, percent-encoded), and a header value's long words on their own
 * (`Bearer <token>` echoed as the token).
 */
export function channelSecrets(channel: ChannelSecretSource): string[] {
  const proxy = urlSecrets(channel.proxy);
  const base = urlSecrets(channel.base_url);
  const keys = [channel.api_key, ...proxy.keys, ...base.keys].filter((s) => s.length >= MIN_KEY);
  const headerValues = Object.values(channel.headers ?? {});
  const values = [
    ...headerValues,
    ...headerValues.flatMap((v) => v.split(/\s+/)),
    ...Object.values(channel.query ?? {}),
    ...proxy.values,
    ...base.values,
  ].filter((s) => s.length >= MIN_VALUE);
  const forms = [...keys, ...values].flatMap((s) => [s, JSON.stringify(s).slice(1, -1), encodeURIComponent(s), new URLSearchParams({ s }).toString().slice(2)]);
  return [...new Set(forms)];
}

/** Text shaped like a credential whatever the channel, each with what is kept of it. */
const KEY_SHAPED: readonly [RegExp, string][] = [
  // A URL's user-info: scheme://user:password@, found from its `://` (the scheme left as it is). No
  // quantifier may run over a long stretch of the text and fail from each position in turn (the user
  // name ends at its `:`, the password at the next `/`): a mebibyte of letters costs one pass.
  [/(:\/\/)[^\s/?#@"'<>:]*:[^\s/?#@"'<>]*@/g, `$1${REDACTED}@`],
  // An authorization header's credentials.
  [/\b(Bearer|Basic|Token|Digest)(\s+)[A-Za-z0-9._~+/=-]{6,}/gi, `$1$2${REDACTED}`],
  // Vendors' keys: `sk-…` (OpenAI, Anthropic, this gateway's own 76-character keys), Stripe's `sk_live_…`,
  // Google's `AIza…`, AWS access key ids, JSON web tokens.
  [/\b(?:sk|rk|pk)[-_][A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, REDACTED],
  // Only at the start of a run of its letters: `-eyJ` inside a long run would otherwise rescan the run.
  [/(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*/g, REDACTED],
  // A long token after a key-ish name: `api_key=…`, `"x-api-key": "…"`, `token: …`, `?key=…`.
  [
    /\b((?:api[_-]?key|x-api-key|x-goog-api-key|access[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|secret|client[_-]?secret|password|passwd|authorization|signature|sig|key)["']?\s{0,8}[:=]\s{0,8}["']?)[A-Za-z0-9._~+/=%-]{12,}/gi,
    `$1${REDACTED}`,
  ],
];

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The pattern that finds any of `secrets`, the longest first (one that holds another is cut whole). */
function secretPattern(secrets: readonly string[]): RegExp | null {
  const kept = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  return kept.length === 0 ? null : new RegExp(kept.map(escaped).join('|'), 'g');
}

function scrubWith(text: string, secrets: readonly string[], pattern: RegExp | null): string {
  let out = pattern ? text.replace(pattern, REDACTED) : text;
  for (const [shape, kept] of KEY_SHAPED) out = out.replace(shape, kept);
  // A secret the replacements themselves completed (the marker's own letters next to a secret's tail):
  // nothing of the text is kept rather than a part of a key.
  if (secrets.some((s) => s.length > 0 && out.includes(s))) return secrets.some((s) => s.length > 0 && WITHHELD.includes(s)) ? '' : WITHHELD;
  return out;
}

/** `text` without any of `secrets` (exact texts) and without key-shaped text. Pure. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  return scrubWith(text, secrets, secretPattern(secrets));
}

/** Key-shaped text only: for text whose channel is not known. */
export const scrubKeyShaped: Scrub = (text) => scrubWith(text, [], null);

const scrubbers = new WeakMap<ChannelSecretSource, Scrub>();

/** The channel's scrub, its pattern built once per channel config (a reload makes new configs). */
export function scrubberOf(channel: ChannelSecretSource): Scrub {
  let scrub = scrubbers.get(channel);
  if (!scrub) {
    const secrets = channelSecrets(channel);
    const pattern = secretPattern(secrets);
    scrub = (text) => scrubWith(text, secrets, pattern);
    scrubbers.set(channel, scrub);
  }
  return scrub;
}

/** An upstream's in-protocol error frame (Streaming error behavior, rule 2: forwarded unchanged, but for the
 * channel's credentials): `event: error` (messages, responses), a failed response, or data that is an
 * error object (chat-completions, generate-content). */
const ERROR_DATA = /^\s*\{\s*"(?:error"|type"\s*:\s*"(?:error|response\.failed)")/;

/** A stream's frame as it may leave the gateway: an error frame scrubbed, model output never (it is what was paid for). */
export function scrubbedFrame<E extends { readonly event?: string | undefined; readonly data: string }>(event: E, scrub: Scrub): E {
  const error = event.event === 'error' || event.event === 'response.failed' || ERROR_DATA.test(event.data);
  return error ? { ...event, data: scrub(event.data) } : event;
}
