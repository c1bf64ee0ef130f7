/**
 * The 12 directions on what real clients send: a client's request decoded, encoded for a channel
 * of another protocol (valid for that protocol's own gateway validator), and decoded again keeps
 * the conversation; an upstream's answer reaches every client protocol with its content and usage.
 */
import { describe, expect, it } from 'vitest';
import type { ChatProtocol } from '../../src/config/schema';
import type { ProtocolAdapter } from '../../src/upstream/contract';
import { chatCompletions } from '../../src/upstream/protocols/chat-completions';
import { generateContent } from '../../src/upstream/protocols/generate-content';
import { messages } from '../../src/upstream/protocols/messages';
import { responses } from '../../src/upstream/protocols/responses';
import { TRANSLATORS, type CanonicalRequest } from '../../src/upstream/translate';
import { REQUESTS, RESPONSES, UNCARRIED } from './realistic';
import { gist, PROTOCOLS } from './support';

const ADAPTERS: Record<ChatProtocol, ProtocolAdapter> = { 'chat-completions': chatCompletions, messages, responses, 'generate-content': generateContent };
const DIRECTIONS = PROTOCOLS.flatMap((client) => PROTOCOLS.filter((c) => c !== client).map((channel) => [client, channel] as const));
const params = (protocol: ChatProtocol, stream: boolean) => (protocol === 'generate-content' ? { model: 'client-model', stream } : {});

/** The conversation as a reader sees it: who said what, which calls were made and answered. */
function conversation(request: CanonicalRequest) {
  return {
    system: request.system,
    turns: request.messages.map((m) => ({
      role: m.role,
      parts: m.parts.flatMap((p): Record<string, unknown>[] => {
        switch (p.type) {
          case 'text':
            return [{ text: p.text }];
          case 'image':
            return [{ image: p.source }];
          case 'tool_call':
            return [{ call: p.id, name: p.name, arguments: JSON.parse(p.arguments) as unknown }];
          case 'tool_result':
            return [{ result: p.callId, content: p.content }];
          case 'reasoning':
            return [];
        }
      }),
    })),
    tools: request.tools,
    toolChoice: request.toolChoice?.type === 'auto' ? undefined : request.toolChoice,
    temperature: request.temperature,
    topP: request.topP,
    maxOutputTokens: request.maxOutputTokens,
    stream: request.stream,
  };
}

describe('client requests', () => {
  it.each(PROTOCOLS)('%s: decodes the whole conversation and names exactly the fields it cannot carry', (client) => {
    const { value, dropped } = TRANSLATORS[client].decodeRequest(REQUESTS[client], params(client, true));
    expect([...dropped].sort()).toEqual([...UNCARRIED[client]].sort());
    expect(value.system).toBe('You are a travel assistant.');
    expect(value.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    const calls = value.messages[1]!.parts.flatMap((p) => (p.type === 'tool_call' ? [p] : []));
    expect(calls.map((c) => c.name)).toEqual(['get_weather', 'get_time']);
    // Every result answers one of the calls, in order, whatever the wire matched them by.
    expect(value.messages[2]!.parts.map((p) => (p.type === 'tool_result' ? p.callId : null))).toEqual(calls.map((c) => c.id));
    expect(value.messages[0]!.parts.map((p) => p.type)).toEqual(['text', 'image', 'image']);
    expect(value.tools?.map((t) => t.name)).toEqual(['get_weather', 'get_time']);
    expect(value).toMatchObject({ temperature: 0.3, topP: 0.9, maxOutputTokens: 512, stream: true });
  });
});

describe.each(DIRECTIONS)('%s client on a %s channel', (client, channel) => {
  it('sends a request the channel protocol accepts and that says the same conversation', () => {
    const decoded = TRANSLATORS[client].decodeRequest(REQUESTS[client], params(client, true));
    const encoded = TRANSLATORS[channel].encodeRequest(decoded.value, { model: 'upstream-model', defaultMaxTokens: 4096 });
    const wire = JSON.parse(JSON.stringify(encoded.value));

    const info = ADAPTERS[channel].inspect(wire, { model: 'upstream-model', stream: true });
    expect(info).not.toHaveProperty('invalid');
    if (!('invalid' in info)) expect(info).toMatchObject({ model: 'upstream-model', stream: true, maxTokens: 512 });

    const back = TRANSLATORS[channel].decodeRequest(wire, params(channel, true));
    // An encoder writes only what its own decoder reads.
    expect(back.dropped).toEqual([]);
    expect(conversation(back.value)).toEqual(conversation(decoded.value));

    // What the channel cannot say is reported, not silently lost.
    if (decoded.value.stop && channel === 'responses') expect(encoded.dropped).toContain('stop');
    else expect(back.value.stop).toEqual(decoded.value.stop);
    const details = decoded.value.messages.some((m) => m.parts.some((p) => p.type === 'image' && p.detail));
    if (details && (channel === 'messages' || channel === 'generate-content')) expect(encoded.dropped).toContain('image.detail');
  });

  it("hands the channel's answer to the client with its content and usage", () => {
    const upstream = TRANSLATORS[channel].decodeResponse(RESPONSES[channel]);
    const wire = JSON.parse(JSON.stringify(TRANSLATORS[client].encodeResponse(upstream, { model: 'client-model', created: 1_700_000_000 })));
    const seen = TRANSLATORS[client].decodeResponse(wire);
    expect(gist(seen)).toEqual(gist(upstream));
    expect(seen.model).toBe('client-model');
    const u = upstream.usage!;
    expect(seen.usage).toMatchObject({ promptTokens: u.promptTokens, cachedTokens: u.cachedTokens, outputTokens: u.outputTokens });
    // The client's own usage extractor (the one the relay bills a native call with) agrees.
    expect(ADAPTERS[client].usageOf(wire)).toMatchObject({ promptTokens: u.promptTokens, cachedTokens: u.cachedTokens, outputTokens: u.outputTokens });
  });
});
