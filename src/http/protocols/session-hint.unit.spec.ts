import { describe, expect, it } from 'vitest';
import { sessionHint } from './session-hint';

describe('sessionHint: the conversation a chat call names', () => {
  it('reads the spec\'s session_id, then conversation_id header (Codex sends both), and x-session-id', () => {
    expect(sessionHint({ session_id: 's', conversation_id: 'c' }, {})).toBe('s');
    expect(sessionHint({ conversation_id: 'c' }, {})).toBe('c');
    expect(sessionHint({ 'x-session-id': 'x' }, {})).toBe('x');
    expect(sessionHint({ session_id: ' ' }, {})).toBeUndefined();
  });

  it('else the body\'s prompt_cache_key (OpenAI chat and responses)', () => {
    expect(sessionHint({}, { prompt_cache_key: 'thread-1' })).toBe('thread-1');
    expect(sessionHint({ session_id: 'h' }, { prompt_cache_key: 'thread-1' })).toBe('h');
    expect(sessionHint({}, { prompt_cache_key: 42 })).toBeUndefined();
  });

  it('else the session Claude Code writes into metadata.user_id, in either of its forms; a bare user id is none', () => {
    const uuid = '0b6c43e5-9b1f-4b6a-8e8c-2f6f4a5c9d10';
    expect(sessionHint({}, { metadata: { user_id: `user_abc123_account_11111111-2222-3333-4444-555555555555_session_${uuid}` } })).toBe(`claude-code:${uuid}`);
    expect(sessionHint({}, { metadata: { user_id: JSON.stringify({ device_id: 'd', account_uuid: 'a', session_id: uuid }) } })).toBe(`claude-code:${uuid}`);
    expect(sessionHint({}, { metadata: { user_id: 'user-42' } })).toBeUndefined();
    expect(sessionHint({}, { metadata: { user_id: '{not json' } })).toBeUndefined();
    expect(sessionHint({}, null)).toBeUndefined();
  });

  it('cuts a long hint to 200 characters', () => {
    expect(sessionHint({ session_id: 'x'.repeat(5000) }, {})!.length).toBe(200);
  });
});
