import { createHash } from 'node:crypto';

/**
 * Rendezvous (highest random weight) hashing: the candidate whose hash with the session id is
 * highest goes first, the others keep their order behind it (failover as usual). The same session
 * over the same candidates always picks the same one, and a candidate added or removed moves only
 * the sessions that pick it, so upstream prefix caches keep working across a conversation's turns.
 */
export function pinnedOrder<T>(candidates: readonly T[], sessionId: string | undefined, idOf: (candidate: T) => string): T[] {
  if (sessionId === undefined || sessionId === '' || candidates.length < 2) return [...candidates];
  let best = 0;
  let bestScore = '';
  candidates.forEach((candidate, i) => {
    const score = createHash('sha256').update(`${sessionId}\u0000${idOf(candidate)}`).digest('hex');
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  });
  return [candidates[best]!, ...candidates.filter((_, i) => i !== best)];
}

/** The session a request names for pinning: header `session_id`, else `conversation_id` (Agent key usage rule 7). */
export function sessionOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['session_id'] ?? headers['session-id'] ?? headers['conversation_id'] ?? headers['conversation-id'];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text.trim() === '' ? undefined : text.trim().slice(0, 200);
}
