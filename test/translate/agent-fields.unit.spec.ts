/**
 * Fields coding agents send that translation cannot carry are named, not dropped silently (issue 36,
 * item 4; the requests they come from are replayed whole by test/compat/agent-requests.int.spec.ts).
 */
import { describe, expect, it } from 'vitest';
import type { ChatProtocol } from '../../src/config/schema';
import { TRANSLATORS } from '../../src/upstream/translate';

const OPTIONS = { model: 'upstream-model', defaultMaxTokens: 32_000 };
const decode = (protocol: ChatProtocol, body: Record<string, unknown>) => TRANSLATORS[protocol].decodeRequest(body);
/** What a translation of the body from `client` to `channel` names, decoder's and encoder's together. */
function named(client: ChatProtocol, channel: ChatProtocol, body: Record<string, unknown>): string[] {
  const decoded = decode(client, body);
  return [...decoded.dropped, ...TRANSLATORS[channel].encodeRequest(decoded.value, OPTIONS).dropped];
}

const user = (text: string) => ({ role: 'user', content: text });

describe('Claude Code (messages)', () => {
  const base = { model: 'm', max_tokens: 32_000, messages: [user('hi')] };

  it("names a tool's cache_control and a cache_control inside a tool result", () => {
    const tool = { name: 'Read', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral', ttl: '1h' } };
    expect(decode('messages', { ...base, tools: [tool] }).dropped).toEqual(['tools.cache_control']);
    const result = { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'ok', cache_control: { type: 'ephemeral' } }] };
    expect(decode('messages', { ...base, messages: [user('hi'), { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] }, { role: 'user', content: [result] }] }).dropped).toEqual([
      'messages.content.cache_control',
    ]);
  });

  it('carries a thinking budget, names a thinking without one (adaptive), and takes disabled as no thinking', () => {
    expect(decode('messages', { ...base, thinking: { type: 'enabled', budget_tokens: 2048 } })).toMatchObject({ value: { reasoning: { budgetTokens: 2048 } }, dropped: [] });
    expect(decode('messages', { ...base, thinking: { type: 'adaptive' } })).toMatchObject({ dropped: ['thinking.adaptive'] });
    expect(decode('messages', { ...base, thinking: { type: 'adaptive' } }).value.reasoning).toBeUndefined();
    expect(decode('messages', { ...base, thinking: { type: 'disabled' } }).dropped).toEqual([]);
  });

  it("names an earlier turn's signed thinking on every channel but Anthropic's own", () => {
    const body = {
      ...base,
      messages: [user('hi'), { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'text', text: 'hello' }] }, user('again')],
    };
    for (const channel of ['chat-completions', 'responses', 'generate-content'] as const) expect(named('messages', channel, body), channel).toEqual(['history.reasoning']);
    expect(TRANSLATORS.messages.encodeRequest(decode('messages', body).value, OPTIONS).dropped).toEqual([]);
  });
});

describe('Codex (responses)', () => {
  const base = { model: 'm', input: [{ role: 'user', content: 'hi' }] };

  it('names reasoning items, even those with only encrypted content, on every other channel', () => {
    const body = {
      ...base,
      input: [
        { role: 'user', content: 'hi' },
        { type: 'reasoning', summary: [], encrypted_content: 'gAAAA' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello' }] },
        { role: 'user', content: 'again' },
      ],
    };
    for (const channel of ['chat-completions', 'messages', 'generate-content'] as const) expect(named('responses', channel, body), channel).toEqual(['history.reasoning']);
  });

  it('names an effort outside minimal–high, a tool choice without a canonical counterpart, and strict tools', () => {
    expect(decode('responses', { ...base, reasoning: { effort: 'xhigh' } })).toMatchObject({ dropped: ['reasoning.effort'] });
    expect(decode('responses', { ...base, reasoning: { effort: 'none' } }).dropped).toEqual(['reasoning.effort']);
    expect(decode('responses', { ...base, reasoning: { effort: 'high' } })).toMatchObject({ value: { reasoning: { effort: 'high' } }, dropped: [] });
    const tools = [{ type: 'function', name: 'shell', parameters: { type: 'object' }, strict: true }];
    expect([...decode('responses', { ...base, tools, tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }).dropped].sort()).toEqual(['tool_choice', 'tools.strict']);
    expect(decode('responses', { ...base, tools: [{ ...tools[0], strict: false }], tool_choice: 'auto' }).dropped).toEqual([]);
  });
});

describe('Codex on Chat Completions', () => {
  it('names a tool choice without a canonical counterpart and strict tools', () => {
    const body = {
      model: 'm',
      messages: [user('hi')],
      tools: [{ type: 'function', function: { name: 'shell', parameters: { type: 'object' }, strict: true } }],
      tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [] } },
    };
    expect([...decode('chat-completions', body).dropped].sort()).toEqual(['tool_choice', 'tools.strict']);
  });
});
