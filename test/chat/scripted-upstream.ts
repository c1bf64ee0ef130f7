/**
 * An upstream that answers exactly what a test scripts (a status, a content type, a body), one
 * answer per request in order: for usage blocks and bodies no vendor's simulator would send, and
 * built-in tool counts. Every protocol's channel may point at it (`${url}/<anything>`).
 */
import { createServer, type Server } from 'node:http';
import type { ChatProtocol, GatewayConfig } from '../../src/config/schema';
import { renderSse } from '../translate/support';
import { PRICES } from './support';

export interface Scripted {
  readonly status?: number;
  readonly contentType: string;
  readonly body: string;
}

export class ScriptedUpstream {
  readonly requests: Array<{ path: string; body: unknown }> = [];
  private queue: Scripted[] = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<ScriptedUpstream> {
    let self: ScriptedUpstream | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        self!.requests.push({ path: request.url ?? '', body });
        const answer = self!.queue.shift() ?? { status: 500, contentType: 'application/json', body: '{"error":{"message":"nothing scripted"}}' };
        response.writeHead(answer.status ?? 200, { 'content-type': answer.contentType });
        response.end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new ScriptedUpstream(server, `http://127.0.0.1:${(server.address() as { port: number }).port}`);
    return self;
  }

  answer(...answers: Scripted[]): void {
    this.queue.push(...answers);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export const TEXT = 'hello there';

const json = (body: unknown): Scripted => ({ contentType: 'application/json', body: JSON.stringify(body) });
const sse = (events: Array<{ event?: string; data: unknown }>): Scripted => ({
  contentType: 'text/event-stream',
  body: renderSse(events.map((e) => ({ event: e.event, data: typeof e.data === 'string' ? e.data : JSON.stringify(e.data) }))),
});

/** Per protocol: a complete answer and a stream with the given usage block (`extra` adds to the body / final event). */
export const ANSWERS: Record<ChatProtocol, { body(usage: unknown, extra?: object): Scripted; stream(usage: unknown, extra?: object): Scripted }> = {
  'chat-completions': {
    body: (usage, extra = {}) =>
      json({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: TEXT }, finish_reason: 'stop' }], usage, ...extra }),
    stream: (usage) =>
      sse([
        { data: { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: TEXT }, finish_reason: null }], usage: null } },
        { data: { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null } },
        { data: { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage } },
        { data: '[DONE]' },
      ]),
  },
  messages: {
    body: (usage, extra = {}) =>
      json({ id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: TEXT }], stop_reason: 'end_turn', stop_sequence: null, usage, ...extra }),
    stream: (usage) => {
      const start = usage !== null && typeof usage === 'object' && !Array.isArray(usage) ? { ...usage, output_tokens: 1 } : usage;
      return sse([
        { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: start } } },
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: TEXT } } },
        { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
        { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage } },
        { event: 'message_stop', data: { type: 'message_stop' } },
      ]);
    },
  },
  responses: {
    body: (usage, extra = {}) =>
      json({
        id: 'resp_1',
        object: 'response',
        created_at: 1,
        status: 'completed',
        model: 'm',
        output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: TEXT, annotations: [] }] }],
        usage,
        ...extra,
      }),
    stream: (usage, extra = {}) => {
      const response = { id: 'resp_1', object: 'response', created_at: 1, model: 'm' };
      return sse([
        { event: 'response.created', data: { type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', output: [], usage: null } } },
        { event: 'response.output_text.delta', data: { type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: TEXT } },
        { event: 'response.completed', data: { type: 'response.completed', sequence_number: 2, response: { ...response, status: 'completed', output: [], usage, ...extra } } },
      ]);
    },
  },
  'generate-content': {
    body: (usage) => json({ candidates: [{ content: { role: 'model', parts: [{ text: TEXT }] }, finishReason: 'STOP', index: 0 }], usageMetadata: usage }),
    stream: (usage) => sse([{ data: { candidates: [{ content: { role: 'model', parts: [{ text: TEXT }] }, finishReason: 'STOP', index: 0 }], usageMetadata: usage } }]),
  },
};

export const MODELS: Record<ChatProtocol, string> = { 'chat-completions': 'cc-model', messages: 'msg-model', responses: 'resp-model', 'generate-content': 'gem-model' };

/** Per channel protocol, a model that no channel of another protocol serves: called from another
 * protocol, it is served through translation. */
export const TRANSLATED_MODELS: Record<ChatProtocol, string> = {
  'chat-completions': 'cc-translated',
  messages: 'msg-translated',
  responses: 'resp-translated',
  'generate-content': 'gem-translated',
};

/** One model per protocol, each with one native channel on the scripted upstream (`models` adds fields
 * per model), and one more per protocol on a channel that translates for the other protocols. */
export function scriptedConfig(url: string, models: Partial<Record<ChatProtocol, object>> = {}, extra: Partial<GatewayConfig> = {}): GatewayConfig {
  const protocols = Object.keys(MODELS) as ChatProtocol[];
  const model = (id: string) => ({
    id,
    owned_by: 'test',
    kind: 'text' as const,
    aliases: [],
    callable: true,
    endpoint_type: null,
    default_max_tokens: 1000,
    context_window: 100_000,
    capabilities: [],
    price: { ...PRICES },
  });
  const channel = (protocol: ChatProtocol, suffix: string, id: string, tools: string[], translation: boolean) => ({
    id: `${protocol}-${suffix}`,
    protocol,
    base_url: `${url}/${protocol}`,
    api_key: 'upstream-key',
    group: 'default',
    priority: 0,
    weight: 1,
    models: [id],
    tools,
    translation,
  });
  return {
    models: [
      ...protocols.map((protocol) => ({ ...model(MODELS[protocol]), ...models[protocol] })),
      ...protocols.map((protocol) => model(TRANSLATED_MODELS[protocol])),
    ],
    channels: [
      ...protocols.map((protocol) => channel(protocol, 'channel', MODELS[protocol], ['web_search'], false)),
      ...protocols.map((protocol) => channel(protocol, 'translating', TRANSLATED_MODELS[protocol], [], true)),
    ],
    ...extra,
  };
}

/** A call of a protocol through the gateway, as a plain HTTP client sends it. */
export function callGateway(
  base: string,
  key: string,
  protocol: ChatProtocol,
  stream: boolean,
  { model = MODELS[protocol], messages = [{ role: 'user', content: 'hi' }], fields = {} }: { model?: string; messages?: Array<{ role: string; content: string }>; fields?: object } = {},
) {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' };
  const post = (path: string, body: object) => fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify({ ...body, ...fields }) });
  switch (protocol) {
    case 'chat-completions':
      return post('/v1/chat/completions', { model, messages, max_tokens: 100, stream });
    case 'messages':
      return post('/v1/messages', { model, messages, max_tokens: 100, stream });
    case 'responses':
      return post('/v1/responses', { model, input: messages, max_output_tokens: 100, stream });
    case 'generate-content':
      return post(stream ? `/v1beta/models/${model}:streamGenerateContent?alt=sse` : `/v1beta/models/${model}:generateContent`, {
        contents: messages.map((m) => ({ role: 'user', parts: [{ text: m.content }] })),
        generationConfig: { maxOutputTokens: 100 },
      });
  }
}

/** The prompt the gateway estimates for `callGateway`'s messages: JSON bytes / 4 of what it counts. */
export function estimatedPrompt(protocol: ChatProtocol, messages = [{ role: 'user', content: 'hi' }]): number {
  const document =
    protocol === 'chat-completions'
      ? messages
      : protocol === 'messages'
        ? { messages }
        : protocol === 'responses'
          ? { input: messages }
          : { contents: messages.map((m) => ({ role: 'user', parts: [{ text: m.content }] })) };
  return Math.ceil(Buffer.byteLength(JSON.stringify(document), 'utf8') / 4);
}
