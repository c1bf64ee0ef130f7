import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../config/schema';
import type { ChatRequestInfo, ProtocolAdapter, StreamEvent } from './contract';
import { chatCompletions, openAiUsage } from './protocols/chat-completions';
import { generateContent, geminiUsage } from './protocols/generate-content';
import { imagesResult } from './protocols/images';
import { anthropicUsage, messages } from './protocols/messages';
import { responses, responsesUsage } from './protocols/responses';
import { checkUsage, isInvalidUsage, MAX_REPORTED_TOKENS, OUTPUT_SLACK_TOKENS, usageBounds, usageInvalidNote, type UsageReport } from './usage';

const INFO: ChatRequestInfo = { model: 'm', stream: true, maxTokens: 100, choices: 1, promptDocument: [], builtinTools: [] };

/** One adapter's usage block in a complete answer, and in a stream, by the prompt and output counts. */
const wire: Record<string, { body(usage: unknown): unknown; stream(usage: unknown): StreamEvent[]; usage(prompt: unknown, output: unknown): unknown; adapter: ProtocolAdapter }> = {
  'chat-completions': {
    adapter: chatCompletions,
    usage: (prompt, output) => ({ prompt_tokens: prompt, completion_tokens: output }),
    body: (usage) => ({ choices: [{ message: { content: 'hi' } }], usage }),
    stream: (usage) => [
      { event: undefined, data: JSON.stringify({ choices: [{ delta: { content: 'hi' } }], usage: null }) },
      { event: undefined, data: JSON.stringify({ choices: [], usage }) },
      { event: undefined, data: '[DONE]' },
    ],
  },
  messages: {
    adapter: messages,
    usage: (prompt, output) => ({ input_tokens: prompt, output_tokens: output }),
    body: (usage) => ({ type: 'message', content: [{ type: 'text', text: 'hi' }], usage }),
    stream: (usage) => [
      { event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { usage: { input_tokens: (usage as { input_tokens?: unknown }).input_tokens, output_tokens: 1 } } }) },
      { event: 'message_delta', data: JSON.stringify({ type: 'message_delta', usage: { output_tokens: (usage as { output_tokens?: unknown }).output_tokens } }) },
      { event: 'message_stop', data: JSON.stringify({ type: 'message_stop' }) },
    ],
  },
  responses: {
    adapter: responses,
    usage: (prompt, output) => ({ input_tokens: prompt, output_tokens: output }),
    body: (usage) => ({ object: 'response', output: [], usage }),
    stream: (usage) => [{ event: 'response.completed', data: JSON.stringify({ type: 'response.completed', response: { output: [], usage } }) }],
  },
  'generate-content': {
    adapter: generateContent,
    usage: (prompt, output) => ({ promptTokenCount: prompt, candidatesTokenCount: output }),
    body: (usage) => ({ candidates: [{ content: { parts: [{ text: 'hi' }] }, finishReason: 'STOP' }], usageMetadata: usage }),
    stream: (usage) => [{ event: undefined, data: JSON.stringify({ candidates: [{ content: { parts: [{ text: 'hi' }] }, finishReason: 'STOP' }], usageMetadata: usage }) }],
  },
};

function streamed(adapter: ProtocolAdapter, events: StreamEvent[]): UsageReport {
  const observer = adapter.observe(INFO, { stream: true });
  for (const event of events) observer.onEvent(event);
  return observer.usage();
}

describe('upstream usage at the adapter boundary', () => {
  for (const [protocol, w] of Object.entries(wire)) {
    describe(protocol, () => {
      it('reads a valid block as usage, in an answer and in a stream', () => {
        for (const report of [w.adapter.usageOf(w.body(w.usage(12, 5))), streamed(w.adapter, w.stream(w.usage(12, 5)))])
          expect(report).toMatchObject({ promptTokens: 12, outputTokens: 5 });
      });

      it.each([
        ['an absurd size', 1e20, /more than 20000000/],
        ['a fraction', 1.5, /not a whole number/],
        ['a negative', -3, /negative/],
        ['a string', '12', /the string "12", not a number/],
        ['an object', { n: 1 }, /an object, not a number/],
      ])('calls %s invalid, with the field in the reason', (_name, bad, reason) => {
        for (const usage of [w.usage(bad, 5), w.usage(12, bad)]) {
          for (const report of [w.adapter.usageOf(w.body(usage)), streamed(w.adapter, w.stream(usage))]) {
            expect(isInvalidUsage(report)).toBe(true);
            expect((report as { invalid: string }).invalid).toMatch(reason);
          }
        }
      });

      it('calls a usage block that is no object invalid, and a missing one absent', () => {
        expect(isInvalidUsage(w.adapter.usageOf(w.body('lots')))).toBe(true);
        expect(isInvalidUsage(w.adapter.usageOf(w.body([1, 2])))).toBe(true);
        expect(w.adapter.usageOf(w.body(undefined))).toBeNull();
        expect(w.adapter.usageOf(w.body(null))).toBeNull();
        for (const body of [null, 5, 'text', [], { usage: 1e20 }]) expect(() => w.adapter.usageOf(body)).not.toThrow();
      });
    });
  }

  it('reads the nested counts and calls a nested block that is no object invalid', () => {
    expect(chatCompletions.usageOf({ usage: { prompt_tokens: 10, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 6 }, completion_tokens_details: null } })).toEqual({
      promptTokens: 10,
      cachedTokens: 6,
      cacheWriteTokens: 0,
      outputTokens: 4,
      reasoningTokens: 0,
    });
    expect(chatCompletions.usageOf({ usage: { prompt_tokens: 10, prompt_tokens_details: { cached_tokens: 0.5 } } })).toEqual({
      invalid: 'prompt_tokens_details.cached_tokens is 0.5, not a whole number',
    });
    expect(chatCompletions.usageOf({ usage: { prompt_tokens: 10, prompt_tokens_details: 'x' } })).toEqual({ invalid: 'prompt_tokens_details is the string "x", not an object' });
  });

  it('calls a sum of valid counts beyond the ceiling invalid (Anthropic prompt = input + cache reads + cache writes)', () => {
    const half = MAX_REPORTED_TOKENS / 2 + 1;
    const report = messages.usageOf({ usage: { input_tokens: half, cache_read_input_tokens: half, output_tokens: 1 } });
    expect(report).toEqual({ invalid: `prompt tokens add up to ${2 * half}, more than ${MAX_REPORTED_TOKENS}` });
  });

  it('counts web searches: Anthropic server_tool_use, Responses web_search_call items', () => {
    expect(messages.usageOf({ usage: { input_tokens: 10, output_tokens: 3, server_tool_use: { web_search_requests: 2 } } })).toMatchObject({ toolCalls: { web_search: 2 } });
    expect(messages.usageOf({ usage: { input_tokens: 10, output_tokens: 3, server_tool_use: { web_search_requests: 2.5 } } })).toEqual({
      invalid: 'server_tool_use.web_search_requests is 2.5, not a whole number',
    });
    expect(messages.usageOf({ usage: { input_tokens: 10, output_tokens: 3, server_tool_use: { web_search_requests: 5000 } } })).toMatchObject({ invalid: expect.stringMatching(/more than 1000/) });
    const output = [{ type: 'web_search_call', id: 'ws_1' }, { type: 'message' }, { type: 'web_search_call', id: 'ws_2' }];
    expect(responses.usageOf({ output, usage: { input_tokens: 10, output_tokens: 3 } })).toMatchObject({ toolCalls: { web_search: 2 } });
    // Item types are data: names of Object.prototype's members count nothing.
    expect(responses.usageOf({ output: [{ type: 'constructor' }, { type: '__proto__' }, { type: 'toString' }], usage: { input_tokens: 10, output_tokens: 3 } })).toEqual({
      promptTokens: 10,
      cachedTokens: 0,
      cacheWriteTokens: 0,
      outputTokens: 3,
      reasoningTokens: 0,
    });

    // Streamed: the items done, when the final response does not list its output.
    const observer = responses.observe(INFO, {});
    for (const id of ['ws_1', 'ws_2', 'ws_2'])
      observer.onEvent({ event: 'response.output_item.done', data: JSON.stringify({ type: 'response.output_item.done', item: { type: 'web_search_call', id } }) });
    observer.onEvent({ event: 'response.completed', data: JSON.stringify({ type: 'response.completed', response: { usage: { input_tokens: 10, output_tokens: 3 } } }) });
    expect(observer.usage()).toMatchObject({ toolCalls: { web_search: 2 } });

    // Anthropic streams the count in message_delta's cumulative usage.
    const stream = messages.observe(INFO, {});
    stream.onEvent({ event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { usage: { input_tokens: 10, output_tokens: 1 } } }) });
    stream.onEvent({ event: 'message_delta', data: JSON.stringify({ type: 'message_delta', usage: { output_tokens: 7, server_tool_use: { web_search_requests: 3 } } }) });
    expect(stream.usage()).toMatchObject({ promptTokens: 10, outputTokens: 7, toolCalls: { web_search: 3 } });
  });

  it('keeps the last valid stream report when a later chunk carries none, and the invalid one when it comes last', () => {
    const observer = chatCompletions.observe(INFO, {});
    observer.onEvent({ event: undefined, data: JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } }) });
    observer.onEvent({ event: undefined, data: JSON.stringify({ choices: [], usage: { completion_tokens: 9 } }) });
    expect(observer.usage()).toMatchObject({ promptTokens: 3, outputTokens: 2 });
    observer.onEvent({ event: undefined, data: JSON.stringify({ choices: [], usage: { prompt_tokens: -1 } }) });
    expect(isInvalidUsage(observer.usage())).toBe(true);
  });

  it('observers take any JSON in a frame without throwing', () => {
    const frames = ['null', '5', '"x"', '[]', '{"choices":5}', '{"choices":[null,{"delta":5}]}', '{"candidates":[null,{"content":{"parts":[null,7]}}]}', '{"type":"content_block_start","content_block":null}', '{"type":"message_start","message":null}', '{"type":"response.completed","response":5}'];
    for (const adapter of [chatCompletions, messages, responses, generateContent]) {
      const observer = adapter.observe(INFO, {});
      for (const data of frames) expect(() => observer.onEvent({ event: undefined, data })).not.toThrow();
      expect(() => observer.usage()).not.toThrow();
    }
  });

  it('shows translators only valid usage', () => {
    expect(openAiUsage({ prompt_tokens: 1e20 })).toBeNull();
    expect(anthropicUsage({ input_tokens: 1.5 })).toBeNull();
    expect(responsesUsage({ input_tokens: '3' })).toBeNull();
    expect(geminiUsage({ promptTokenCount: -2 })).toBeNull();
    expect(openAiUsage({ prompt_tokens: 4, completion_tokens: 2 })).toMatchObject({ promptTokens: 4, outputTokens: 2 });
  });
});

describe('usage checked against the request', () => {
  const model = { id: 'm', default_max_tokens: 1000, context_window: 8000 } as ModelConfig;
  const usage = (promptTokens: number, outputTokens: number) => ({ promptTokens, cachedTokens: 0, cacheWriteTokens: 0, outputTokens, reasoningTokens: 0 });

  it('believes output up to twice what the request allowed plus the slack, and a prompt up to twice the context window', () => {
    const bounds = usageBounds(model, INFO);
    expect(bounds).toEqual({ outputAllowed: 100, contextWindow: 8000 });
    expect(checkUsage(usage(16_000, 200 + OUTPUT_SLACK_TOKENS), bounds)).toEqual(usage(16_000, 200 + OUTPUT_SLACK_TOKENS));
    expect(checkUsage(usage(10, 201 + OUTPUT_SLACK_TOKENS), bounds)).toEqual({ invalid: `output tokens ${201 + OUTPUT_SLACK_TOKENS} are far beyond the 100 the request allowed` });
    expect(checkUsage(usage(16_001, 10), bounds)).toEqual({ invalid: "prompt tokens 16001 are far beyond the model's context window of 8000" });
  });

  it("uses the model's default cap without an explicit one, times the request's choices once it carries them", () => {
    expect(usageBounds(model, { ...INFO, maxTokens: null }).outputAllowed).toBe(1000);
    expect(usageBounds(model, { ...INFO, choices: 4 } as ChatRequestInfo).outputAllowed).toBe(400);
    expect(usageBounds({ id: 'm' } as ModelConfig, { ...INFO, maxTokens: null })).toEqual({ outputAllowed: null, contextWindow: null });
  });

  it('passes absent and invalid reports through', () => {
    const bounds = usageBounds(model, INFO);
    expect(checkUsage(null, bounds)).toBeNull();
    expect(checkUsage({ invalid: 'x' }, bounds)).toEqual({ invalid: 'x' });
  });

  it('marks the row: a success gets the code, an interrupted stream keeps its own and gains the reason', () => {
    expect(usageInvalidNote('prompt_tokens is -1')).toEqual({ error_code: 'upstream_usage_invalid', error_message: 'upstream usage invalid (prompt_tokens is -1): billed on the estimate' });
    expect(usageInvalidNote('prompt_tokens is -1', { code: 'client_disconnected', message: 'the client disconnected' })).toEqual({
      error_code: 'client_disconnected',
      error_message: 'the client disconnected; upstream usage invalid (prompt_tokens is -1): billed on the estimate',
    });
  });
});

describe('images usage', () => {
  it('keeps only numbers the event log can read back: bad token counts as 0, bad times as absent', () => {
    const result = imagesResult({ created: 1e20, expires_at: 1.5, data: [{ url: 'u' }], usage: { input_tokens: 1e20, output_tokens: 3 } });
    expect(result).toMatchObject({ count: 1, created: null, expiresAt: null, inputTokens: 0, outputTokens: 0 });
    expect(imagesResult({ created: 1_700_000_000, data: [], usage: { input_tokens: 5, output_tokens: 3 } })).toMatchObject({ created: 1_700_000_000, inputTokens: 5, outputTokens: 3 });
  });
});
