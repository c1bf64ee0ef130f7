import { describe, expect, it } from 'vitest';
import { pinnedOrder, sessionOf } from './pin';
import { INJECTED_PAGE_CHARS, INJECTED_TOTAL_CHARS, knowledgeContext, latestUserText, rewriteAgentBody, type RewriteFacts } from './rewrite';
import { searchQuery } from './agent-call';

const agent = { name: 'A', system_prompt: 'You are A.', model: null, web_search: true, drawing: false, kb_ids: [], temperature: 0.2, published: true };
const facts: RewriteFacts = { agent, model: 'm', vision: false, builtinTools: ['web_search'], pages: [] };

describe('rewriteAgentBody', () => {
  it('puts the agent model and system prompt first, drops client tools, applies the agent temperature', () => {
    const out = rewriteAgentBody(
      { model: 'other', messages: [{ role: 'system', content: 'mine' }, { role: 'user', content: 'hi' }], tools: [{ type: 'function' }], tool_choice: 'auto', functions: [] },
      facts,
    );
    expect(out).toEqual({
      body: { model: 'm', messages: [{ role: 'system', content: 'You are A.' }, { role: 'system', content: 'mine' }, { role: 'user', content: 'hi' }], temperature: 0.2 },
    });
  });

  it('adds built-in tools on streamed calls, and keeps a temperature the client set (0 included)', () => {
    const out = rewriteAgentBody({ messages: [{ role: 'user', content: 'hi' }], stream: true, temperature: 0 }, facts);
    expect(out).toMatchObject({ body: { tools: [{ type: 'web_search' }], temperature: 0 } });
  });

  it('injects knowledge after the system prompt, bounded per page and in total', () => {
    const long = 'x'.repeat(5000);
    const pages = [1, 2, 3, 4].map((i) => ({ kbId: 'kb', id: `p${i}`, title: `T${i}`, body: long }));
    const context = knowledgeContext(pages)!;
    expect(context.match(/^## /gm)).toHaveLength(3);
    expect(context.length).toBeLessThan(INJECTED_TOTAL_CHARS + 300);
    expect(context).toContain(`## T1 (kb/p1)\n${'x'.repeat(INJECTED_PAGE_CHARS)}…`);
    const out = rewriteAgentBody({ messages: [{ role: 'user', content: 'q' }] }, { ...facts, pages });
    expect((out as { body: { messages: unknown[] } }).body.messages[1]).toEqual({ role: 'system', content: context });
  });

  it('refuses images to a model without vision, conversation_id, and bodies without messages', () => {
    const image = { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x' } }] }] };
    expect(rewriteAgentBody(image, facts)).toMatchObject({ error: { code: 'model_no_vision' } });
    expect(rewriteAgentBody(image, { ...facts, vision: true })).toHaveProperty('body');
    expect(rewriteAgentBody({ messages: [{ role: 'user', content: 'x' }], conversation_id: 'c' }, facts)).toMatchObject({ error: { code: 'invalid_request' } });
    expect(rewriteAgentBody({ messages: [] }, facts)).toMatchObject({ error: { code: 'invalid_request' } });
    expect(rewriteAgentBody('text', facts)).toMatchObject({ error: { code: 'invalid_request' } });
  });

  it('searches with the latest user message, any of its words', () => {
    expect(latestUserText({ messages: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'a' }, { role: 'user', content: [{ type: 'text', text: 'refund policy?' }] }] })).toBe(
      'refund policy?',
    );
    expect(searchQuery('What is the refund policy?')).toBe('What or is or the or refund or policy');
  });
});

describe('pinnedOrder (rendezvous hashing)', () => {
  const channels = ['a', 'b', 'c', 'd'];
  it('is stable per session, keeps the rest in order, and leaves unpinned calls alone', () => {
    const first = pinnedOrder(channels, 's1', (c) => c);
    expect(pinnedOrder(channels, 's1', (c) => c)).toEqual(first);
    expect(first.slice(1)).toEqual(channels.filter((c) => c !== first[0]));
    expect(pinnedOrder(channels, undefined, (c) => c)).toEqual(channels);
  });

  it('moves only the sessions of a channel that goes away', () => {
    const sessions = Array.from({ length: 200 }, (_, i) => `s${i}`);
    const before = sessions.map((s) => pinnedOrder(channels, s, (c) => c)[0]);
    const after = sessions.map((s) => pinnedOrder(['a', 'b', 'c'], s, (c) => c)[0]);
    sessions.forEach((_, i) => {
      if (before[i] !== 'd') expect(after[i]).toBe(before[i]);
    });
    // Spread over every channel.
    expect(new Set(before)).toEqual(new Set(channels));
  });

  it('reads session_id, else conversation_id', () => {
    expect(sessionOf({ session_id: 's', conversation_id: 'c' })).toBe('s');
    expect(sessionOf({ conversation_id: 'c' })).toBe('c');
    expect(sessionOf({ session_id: ' ' })).toBeUndefined();
  });
});
