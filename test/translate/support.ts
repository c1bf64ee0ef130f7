/**
 * Test helpers for the translators: SSE transcripts in and out, and readers that let each vendor's
 * official SDK accumulate a stream (its own validation of the event sequence), returning the
 * result as a canonical answer so answers of different protocols can be compared.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { createParser } from 'eventsource-parser';
import OpenAI from 'openai';
import type { ChatProtocol } from '../../src/config/schema';
import { TRANSLATORS, type CanonicalResponse, type WireEvent } from '../../src/upstream/translate';

export const PROTOCOLS: readonly ChatProtocol[] = ['chat-completions', 'messages', 'responses', 'generate-content'];

export function parseSse(text: string): WireEvent[] {
  const events: WireEvent[] = [];
  const parser = createParser({ onEvent: (e) => events.push({ event: e.event, data: e.data }) });
  parser.feed(text);
  return events;
}

export function renderSse(events: readonly WireEvent[]): string {
  return events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}${e.data.split('\n').map((l) => `data: ${l}`).join('\n')}\n\n`).join('');
}

export function fixture(name: string): { protocol: ChatProtocol; events: WireEvent[] } {
  const protocol = PROTOCOLS.find((p) => name.startsWith(`${p}.`))!;
  return { protocol, events: parseSse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')) };
}

/** One local HTTP server answering every request with the SSE text it was last given. */
export class SseServer {
  private body = '';
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<SseServer> {
    let self: SseServer | undefined;
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(self!.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new SseServer(server, `http://127.0.0.1:${(server.address() as { port: number }).port}`);
    return self;
  }

  serve(body: string): void {
    this.body = body;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Lets the protocol's official SDK read the stream and returns what it accumulated, as canonical. */
export async function readWithSdk(server: SseServer, protocol: ChatProtocol, events: readonly WireEvent[]): Promise<CanonicalResponse> {
  server.serve(renderSse(events));
  switch (protocol) {
    case 'chat-completions': {
      const client = new OpenAI({ apiKey: 'k', baseURL: server.url, maxRetries: 0 });
      const stream = client.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } });
      return TRANSLATORS[protocol].decodeResponse(await stream.finalChatCompletion());
    }
    case 'responses': {
      const client = new OpenAI({ apiKey: 'k', baseURL: server.url, maxRetries: 0 });
      const stream = client.responses.stream({ model: 'm', input: 'x' });
      return TRANSLATORS[protocol].decodeResponse(await stream.finalResponse());
    }
    case 'messages': {
      const client = new Anthropic({ apiKey: 'k', baseURL: server.url, maxRetries: 0 });
      const stream = client.messages.stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] });
      return TRANSLATORS[protocol].decodeResponse(await stream.finalMessage());
    }
    case 'generate-content': {
      const ai = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: server.url } });
      const parts: Record<string, unknown>[] = [];
      let last: Record<string, unknown> = {};
      for await (const chunk of await ai.models.generateContentStream({ model: 'm', contents: 'x' })) {
        last = chunk as unknown as Record<string, unknown>;
        for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
          const previous = parts.at(-1);
          // Adjacent text of the same kind is one part, as a non-streamed answer would have it.
          if (part.text !== undefined && previous && typeof previous.text === 'string' && previous.thought === part.thought)
            parts[parts.length - 1] = { ...previous, text: previous.text + part.text };
          else parts.push(part as Record<string, unknown>);
        }
      }
      const candidate = (last.candidates as Record<string, unknown>[] | undefined)?.[0] ?? {};
      return TRANSLATORS[protocol].decodeResponse({ ...last, candidates: [{ ...candidate, content: { role: 'model', parts } }] });
    }
  }
}

/** Text, reasoning and calls of an answer, compared across protocols (ids aside). */
export function gist(response: CanonicalResponse) {
  return {
    text: response.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(''),
    reasoning: response.content.flatMap((p) => (p.type === 'reasoning' ? [p.text] : [])).join(''),
    calls: response.content.flatMap((p) => (p.type === 'tool_call' ? [{ name: p.name, arguments: JSON.parse(p.arguments || '{}') as unknown }] : [])),
    finishReason: response.finishReason,
  };
}
