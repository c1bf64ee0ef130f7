/**
 * Golden transcripts of real vendor streams (test/translate/fixtures, written from each vendor's
 * streaming documentation) through decoder → encoder for every client protocol. The client
 * stream must follow its protocol's rules and, read by the client's official SDK, say what the
 * upstream's official SDK reads in the original transcript.
 */
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamBridge, TRANSLATORS } from '../../src/upstream/translate';
import { STREAM_SHAPE } from './stream-shape';
import { fixture, gist, PROTOCOLS, readWithSdk, SseServer } from './support';

let server: SseServer;
beforeAll(async () => {
  server = await SseServer.start();
});
afterAll(() => server.close());

const FIXTURES = readdirSync(new URL('./fixtures', import.meta.url)).filter((name) => name.endsWith('.sse'));

describe.each(FIXTURES)('transcript %s', (name) => {
  const { protocol: upstream, events } = fixture(name);

  it.each(PROTOCOLS)('reaches a %s client intact', async (client) => {
    const bridge = streamBridge(TRANSLATORS[upstream].streamDecoder(), TRANSLATORS[client].streamEncoder({ model: 'client-model', created: 1_700_000_000, includeUsage: true }));
    const out = [...events.flatMap((e) => bridge.push(e)), ...bridge.end()];

    expect(STREAM_SHAPE[client](out)).toEqual([]);

    const expected = await readWithSdk(server, upstream, events);
    const got = await readWithSdk(server, client, out);
    const want = gist(expected);
    // The openai SDK keeps only the last `reasoning_content` delta (a field it does not know).
    expect(gist(got)).toEqual(client === 'chat-completions' ? { ...want, reasoning: gist(got).reasoning } : want);
    // Tool call ids survive (Gemini sends none: the decoder makes stable ones).
    if (upstream !== 'generate-content')
      expect(got.content.flatMap((p) => (p.type === 'tool_call' ? [p.id] : []))).toEqual(expected.content.flatMap((p) => (p.type === 'tool_call' ? [p.id] : [])));

    // Usage as billed: each client protocol carries prompt (with cached), cached and output tokens;
    // cache writes only Anthropic, reasoning tokens every protocol but Anthropic.
    const usage = expected.usage!;
    expect(got.usage).toMatchObject({ promptTokens: usage.promptTokens, cachedTokens: usage.cachedTokens, outputTokens: usage.outputTokens });
    if (client === 'messages') expect(got.usage!.cacheWriteTokens).toBe(usage.cacheWriteTokens);
    else expect(got.usage!.reasoningTokens).toBe(usage.reasoningTokens);
  });

  it('emits every upstream tool call exactly once, start, arguments and end in order', () => {
    const bridge = streamBridge(TRANSLATORS[upstream].streamDecoder(), TRANSLATORS[upstream].streamEncoder({ model: 'm', created: 1 }));
    for (const e of events) bridge.push(e);
    bridge.end();
    const byIndex = new Map<number, string[]>();
    for (const e of bridge.canonical)
      if (e.type === 'tool_call_start' || e.type === 'tool_call_delta' || e.type === 'tool_call_end') byIndex.set(e.index, [...(byIndex.get(e.index) ?? []), e.type]);
    for (const steps of byIndex.values()) {
      expect(steps[0]).toBe('tool_call_start');
      expect(steps.at(-1)).toBe('tool_call_end');
      expect(steps.filter((s) => s !== 'tool_call_delta')).toHaveLength(2);
    }
    expect([...byIndex.keys()]).toEqual([...byIndex.keys()].map((_, i) => i));
    expect(bridge.canonical.filter((e) => e.type === 'finish')).toHaveLength(1);
  });

  it('leaves a cut stream visibly cut: no terminator for the client', () => {
    const cut = events.slice(0, Math.max(1, Math.floor(events.length / 2)));
    for (const client of PROTOCOLS) {
      const bridge = streamBridge(TRANSLATORS[upstream].streamDecoder(), TRANSLATORS[client].streamEncoder({ model: 'm', created: 1 }));
      const out = [...cut.flatMap((e) => bridge.push(e)), ...bridge.end()];
      const finished = bridge.canonical.some((e) => e.type === 'finish');
      if (finished) continue; // a transcript whose first half already finished (Gemini's single chunk)
      expect(out.some((e) => e.data === '[DONE]' || e.event === 'message_stop' || e.event === 'response.completed' || e.data.includes('finishReason'))).toBe(false);
    }
  });
});

describe('the stream shape rules themselves', () => {
  it.each(PROTOCOLS)('reject a %s stream that lost its last event or has one twice', (client) => {
    const { protocol, events } = fixture('messages.tool-use.sse');
    const bridge = streamBridge(TRANSLATORS[protocol].streamDecoder(), TRANSLATORS[client].streamEncoder({ model: 'm', created: 1 }));
    const out = [...events.flatMap((e) => bridge.push(e)), ...bridge.end()];
    expect(STREAM_SHAPE[client](out)).toEqual([]);
    expect(STREAM_SHAPE[client](out.slice(0, -1))).not.toEqual([]);
    expect(STREAM_SHAPE[client]([...out, out.at(-1)!])).not.toEqual([]);
  });
});
