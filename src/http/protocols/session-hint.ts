import { isObject } from '../../upstream/json';

/** Longer hints are cut: a pin's key stays small whatever a client sends. */
const MAX_HINT = 200;

const HEADERS = ['session_id', 'session-id', 'conversation_id', 'conversation-id', 'x-session-id'] as const;

/**
 * The conversation a chat call belongs to, for pinning it to one channel (src/channels/session-pins.ts):
 * the spec's `session_id` (or `conversation_id`) header, which Codex sends (and `x-session-id`), else the
 * body's `prompt_cache_key` (OpenAI chat completions and responses; Codex sets it to its conversation id),
 * else the session Claude Code writes into the Messages `metadata.user_id` (`user_<hash>_account_<uuid>_session_<uuid>`,
 * or the same fields as a JSON object). A `metadata.user_id` without a session names a user, not a
 * conversation, and is not one. Undefined: the call is routed as any other.
 */
export function sessionHint(headers: Record<string, string | string[] | undefined>, body: unknown): string | undefined {
  for (const name of HEADERS) {
    const hint = text(headers[name]);
    if (hint !== undefined) return hint;
  }
  if (!isObject(body)) return undefined;
  const cacheKey = text(body['prompt_cache_key']);
  if (cacheKey !== undefined) return cacheKey;
  const metadata = body['metadata'];
  return isObject(metadata) ? claudeCodeSession(metadata['user_id']) : undefined;
}

function claudeCodeSession(userId: unknown): string | undefined {
  if (typeof userId !== 'string') return undefined;
  const suffix = /_session_([A-Za-z0-9-]{1,100})$/.exec(userId);
  if (suffix) return `claude-code:${suffix[1]}`;
  if (!userId.trimStart().startsWith('{')) return undefined;
  try {
    const parsed: unknown = JSON.parse(userId);
    const session = isObject(parsed) ? text(parsed['session_id']) : undefined;
    return session === undefined ? undefined : `claude-code:${session}`;
  } catch {
    return undefined;
  }
}

function text(value: unknown): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  if (typeof first !== 'string') return undefined;
  const trimmed = first.trim();
  return trimmed === '' ? undefined : trimmed.slice(0, MAX_HINT);
}
