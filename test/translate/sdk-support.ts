/**
 * End-to-end harness for translated calls: the simulator as upstream, one model per channel
 * protocol whose only channel translates, and per client protocol a small conversation driver on
 * the official SDK that keeps its history in its own wire shape (as a real client would).
 */
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI, type Content } from '@google/genai';
import OpenAI from 'openai';
import { expect } from 'vitest';
import type { ChannelConfig, ChatProtocol, GatewayConfig } from '../../src/config/schema';
import type { Simulator } from '../../src/simulator';
import { simulatorChannel } from '../support/channels';
import { startSimulatedGateway, type SimulatedGateway } from '../support/gateway';

export const MODEL_OF: Record<ChatProtocol, string> = {
  'chat-completions': 'oa-only',
  messages: 'an-only',
  responses: 'rs-only',
  'generate-content': 'gm-only',
};

export function translationConfig(sim: Simulator): GatewayConfig {
  const model = (id: string) => ({
    id,
    owned_by: 'test',
    kind: 'text' as const,
    aliases: [],
    callable: true,
    endpoint_type: null,
    default_max_tokens: 1000,
    capabilities: [],
    price: { input: '1.00', cached_input: '0.50', output: '2.00' },
  });
  const channel = (id: string, protocol: ChatProtocol, models: string[], extra: Partial<ChannelConfig> = {}) =>
    simulatorChannel(sim, id, protocol, models, { tools: ['web_search'], translation: true, ...extra });
  return {
    models: [...Object.values(MODEL_OF).map(model), model('native-only'), model('both'), model('two-ways')],
    channels: [
      channel('oa-1', 'chat-completions', ['oa-only', 'both']),
      // two-ways: translated channels of two protocols, so failover crosses protocols.
      channel('tw-1', 'chat-completions', ['two-ways']),
      channel('tw-2', 'generate-content', ['two-ways'], { priority: 1 }),
      channel('an-1', 'messages', ['an-only', 'both'], { translation: ['chat-completions', 'responses', 'generate-content'] }),
      channel('rs-1', 'responses', ['rs-only']),
      channel('gm-1', 'generate-content', ['gm-only']),
      channel('native', 'chat-completions', ['native-only'], { translation: false }),
    ],
  };
}

export type Harness = SimulatedGateway;

export function startHarness(): Promise<Harness> {
  return startSimulatedGateway(translationConfig, { chatTimeoutMs: 5000 });
}

/** What one turn showed the client. `prompt` includes cached and cache-write tokens. */
export interface Turn {
  readonly text: string;
  readonly calls: readonly { name: string; args: unknown }[];
  /** The client protocol's own finish value. */
  readonly finish: string | null | undefined;
  readonly usage: { prompt: number; output: number };
  readonly translation: string | null;
  readonly warning: string | null;
}

export const TOOLS = [
  { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  { name: 'get_time', description: 'Local time', parameters: { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] } },
];

/** A client holding one conversation: `ask` sends user text, `answer` the results of the last calls. */
export interface Conversation {
  ask(text: string, options: { stream: boolean; tools?: boolean }): Promise<Turn>;
  answer(result: (call: { name: string; args: unknown }) => string, options: { stream: boolean }): Promise<Turn>;
}

/** Response headers of the last request a fetch-capable SDK made. */
function recordingFetch() {
  const last: { headers: Headers | null } = { headers: null };
  const fetcher: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    last.headers = response.headers;
    return response;
  };
  return { fetcher, header: (name: string) => last.headers?.get(name) ?? null };
}

export function chatConversation(baseUrl: string, key: string, model: string): Conversation {
  const rec = recordingFetch();
  const client = new OpenAI({ apiKey: key, baseURL: `${baseUrl}/v1`, maxRetries: 0, fetch: rec.fetcher });
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'Be brief.' }];
  let tools: OpenAI.ChatCompletionTool[] | undefined;
  let pending: OpenAI.ChatCompletionMessageToolCall[] = [];
  const send = async (stream: boolean): Promise<Turn> => {
    const body = { model, messages, ...(tools ? { tools } : {}) };
    const completion = stream
      ? await client.chat.completions.stream({ ...body, stream_options: { include_usage: true } }).finalChatCompletion()
      : await client.chat.completions.create(body);
    const choice = completion.choices[0]!;
    messages.push(choice.message as OpenAI.ChatCompletionMessageParam);
    pending = (choice.message.tool_calls ?? []).filter((c) => c.type === 'function');
    return {
      text: choice.message.content ?? '',
      calls: pending.map((c) => ({ name: c.type === 'function' ? c.function.name : '', args: JSON.parse(c.type === 'function' ? c.function.arguments : '{}') })),
      finish: choice.finish_reason,
      usage: { prompt: completion.usage!.prompt_tokens, output: completion.usage!.completion_tokens },
      translation: rec.header('x-protocol-translation'),
      warning: rec.header('x-protocol-warning'),
    };
  };
  return {
    ask(text, { stream, tools: withTools }) {
      if (withTools) tools = TOOLS.map((t) => ({ type: 'function', function: t }));
      messages.push({ role: 'user', content: text });
      return send(stream);
    },
    answer(result, { stream }) {
      for (const call of pending)
        if (call.type === 'function') messages.push({ role: 'tool', tool_call_id: call.id, content: result({ name: call.function.name, args: JSON.parse(call.function.arguments) }) });
      return send(stream);
    },
  };
}

export function messagesConversation(baseUrl: string, key: string, model: string): Conversation {
  const rec = recordingFetch();
  const client = new Anthropic({ apiKey: key, baseURL: baseUrl, maxRetries: 0, fetch: rec.fetcher });
  const messages: Anthropic.MessageParam[] = [];
  let tools: Anthropic.Tool[] | undefined;
  let pending: Anthropic.ToolUseBlock[] = [];
  const send = async (stream: boolean): Promise<Turn> => {
    const body = { model, max_tokens: 400, system: 'Be brief.', messages, ...(tools ? { tools } : {}) };
    const message = stream ? await client.messages.stream(body).finalMessage() : await client.messages.create(body);
    messages.push({ role: 'assistant', content: message.content });
    pending = message.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    const u = message.usage;
    return {
      text: message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join(''),
      calls: pending.map((c) => ({ name: c.name, args: c.input })),
      finish: message.stop_reason,
      usage: { prompt: u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0), output: u.output_tokens },
      translation: rec.header('x-protocol-translation'),
      warning: rec.header('x-protocol-warning'),
    };
  };
  return {
    ask(text, { stream, tools: withTools }) {
      if (withTools) tools = TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters as Anthropic.Tool.InputSchema }));
      messages.push({ role: 'user', content: text });
      return send(stream);
    },
    answer(result, { stream }) {
      messages.push({ role: 'user', content: pending.map((c) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: result({ name: c.name, args: c.input }) })) });
      return send(stream);
    },
  };
}

export function responsesConversation(baseUrl: string, key: string, model: string): Conversation {
  const rec = recordingFetch();
  const client = new OpenAI({ apiKey: key, baseURL: `${baseUrl}/v1`, maxRetries: 0, fetch: rec.fetcher });
  const input: OpenAI.Responses.ResponseInputItem[] = [];
  let tools: OpenAI.Responses.FunctionTool[] | undefined;
  let pending: OpenAI.Responses.ResponseFunctionToolCall[] = [];
  const send = async (stream: boolean): Promise<Turn> => {
    const body = { model, instructions: 'Be brief.', input, ...(tools ? { tools } : {}) };
    const response = stream ? await client.responses.stream(body).finalResponse() : await client.responses.create(body);
    input.push(...(response.output as OpenAI.Responses.ResponseInputItem[]));
    pending = response.output.flatMap((o) => (o.type === 'function_call' ? [o as OpenAI.Responses.ResponseFunctionToolCall] : []));
    return {
      // The stream helper's final response has no `output_text` convenience: read the items.
      text: response.output.flatMap((o) => (o.type === 'message' ? o.content.flatMap((c) => (c.type === 'output_text' ? [c.text] : [])) : [])).join(''),
      calls: pending.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) })),
      finish: response.status,
      usage: { prompt: response.usage!.input_tokens, output: response.usage!.output_tokens },
      translation: rec.header('x-protocol-translation'),
      warning: rec.header('x-protocol-warning'),
    };
  };
  return {
    ask(text, { stream, tools: withTools }) {
      if (withTools) tools = TOOLS.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.parameters, strict: false }));
      input.push({ role: 'user', content: [{ type: 'input_text', text }] });
      return send(stream);
    },
    answer(result, { stream }) {
      for (const call of pending) input.push({ type: 'function_call_output', call_id: call.call_id, output: result({ name: call.name, args: JSON.parse(call.arguments) }) });
      return send(stream);
    },
  };
}

export function geminiConversation(baseUrl: string, key: string, model: string): Conversation {
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl } });
  const contents: Content[] = [];
  let withTools = false;
  let pending: { id?: string; name: string; args: unknown }[] = [];
  const send = async (stream: boolean): Promise<Turn> => {
    const request = {
      model,
      contents,
      config: { systemInstruction: 'Be brief.', ...(withTools ? { tools: [{ functionDeclarations: TOOLS.map((t) => ({ name: t.name, description: t.description, parametersJsonSchema: t.parameters })) }] } : {}) },
    };
    const chunks = stream ? [] : [await ai.models.generateContent(request)];
    if (stream) for await (const chunk of await ai.models.generateContentStream(request)) chunks.push(chunk);
    const parts = chunks.flatMap((c) => c.candidates?.[0]?.content?.parts ?? []);
    contents.push({ role: 'model', parts });
    pending = parts.flatMap((p) => (p.functionCall ? [{ ...(p.functionCall.id ? { id: p.functionCall.id } : {}), name: p.functionCall.name!, args: p.functionCall.args }] : []));
    const last = chunks.at(-1)!;
    const u = last.usageMetadata!;
    const headers = last.sdkHttpResponse?.headers ?? {};
    return {
      text: parts.flatMap((p) => (p.text && !p.thought ? [p.text] : [])).join(''),
      calls: pending.map((c) => ({ name: c.name, args: c.args })),
      finish: last.candidates?.[0]?.finishReason,
      usage: { prompt: u.promptTokenCount ?? 0, output: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0) },
      translation: headers['x-protocol-translation'] ?? null,
      warning: headers['x-protocol-warning'] ?? null,
    };
  };
  return {
    ask(text, { stream, tools }) {
      if (tools) withTools = true;
      contents.push({ role: 'user', parts: [{ text }] });
      return send(stream);
    },
    answer(result, { stream }) {
      contents.push({ role: 'user', parts: pending.map((c) => ({ functionResponse: { ...(c.id ? { id: c.id } : {}), name: c.name, response: { result: result(c) } } })) });
      return send(stream);
    },
  };
}

export const CONVERSATION: Record<ChatProtocol, (baseUrl: string, key: string, model: string) => Conversation> = {
  'chat-completions': chatConversation,
  messages: messagesConversation,
  responses: responsesConversation,
  'generate-content': geminiConversation,
};

/** The client protocol's word for "the model wants tools run" / "finished". */
export const FINISH: Record<ChatProtocol, { stop: string; tools: string }> = {
  'chat-completions': { stop: 'stop', tools: 'tool_calls' },
  messages: { stop: 'end_turn', tools: 'tool_use' },
  responses: { stop: 'completed', tools: 'completed' },
  'generate-content': { stop: 'STOP', tools: 'STOP' },
};

interface Settled {
  call: { status: string; input_tokens: number; output_tokens: number; endpoint: string; channel_id: string | null };
}

/** Every settlement of the account so far (they are appended right after the answer leaves). */
export async function settlements(h: Harness, accountId: string, count: number): Promise<Settled[]> {
  const read = async () => {
    await h.t.gateway.ledger.idle();
    const events = await h.t.gateway.storage.store.readStream(`wallet-${accountId}`);
    return events.filter((e) => e.type === 'HoldSettled').map((e) => e.data as Settled);
  };
  await expect.poll(async () => (await read()).length).toBe(count);
  return read();
}
