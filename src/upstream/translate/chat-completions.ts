/**
 * OpenAI Chat Completions ⇄ canonical. Wire reference: platform.openai.com/docs/api-reference/chat
 * (request, `chat.completion`, `chat.completion.chunk`). Reasoning travels as `reasoning_content`,
 * the field OpenAI-compatible reasoning vendors (DeepSeek, vLLM) use; OpenAI itself sends none.
 */
import { openAiUsage } from '../protocols/chat-completions';
import type {
  AnswerContext,
  CanonicalEvent,
  CanonicalRequest,
  CanonicalResponse,
  FinishReason,
  Message,
  OutputPart,
  Part,
  ProtocolTranslator,
  ReasoningEffort,
  ResponseFormat,
  StreamDecoder,
  StreamEncoder,
  ToolChoice,
  Usage,
  WireEvent,
} from './canonical';
import {
  appendPart,
  asArray,
  asRecord,
  decodeOpenAiTools,
  compact,
  dropBuiltinTools,
  effortOf,
  eventData,
  imageFromUrl,
  imageToUrl,
  isRecord,
  num,
  OPENAI_EFFORTS,
  OpenCalls,
  str,
  textOf,
  toolNameFor,
  unreadKeys,
  type Json,
} from './shared';

const READ = [
  'model', 'messages', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop',
  'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'reasoning_effort',
];

function decodeUserContent(content: unknown, dropped: Set<string>): Part[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const parts: Part[] = [];
  for (const item of asArray(content)) {
    const p = asRecord(item);
    if (p.type === 'text') parts.push({ type: 'text', text: str(p.text) ?? '' });
    else if (p.type === 'image_url') {
      const image = asRecord(p.image_url);
      const detail = str(image.detail);
      // `auto` is the default: the same image whether or not the client spelled it out.
      if (detail === 'auto') parts.push({ type: 'image', source: imageFromUrl(str(image.url) ?? '') });
      else parts.push({ type: 'image', source: imageFromUrl(str(image.url) ?? ''), ...(detail ? { detail } : {}) });
    } else dropped.add(`messages.content.${String(p.type)}`);
  }
  return parts;
}

function decodeMessages(wire: unknown[], dropped: Set<string>): { system?: string; messages: Message[] } {
  const system: string[] = [];
  const messages: Message[] = [];
  for (const item of wire) {
    const m = asRecord(item);
    // A participant name has no place in the other protocols.
    if (typeof m.name === 'string' && m.role !== 'tool') dropped.add('messages.name');
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(textOf(m.content));
        break;
      case 'user':
        messages.push({ role: 'user', parts: decodeUserContent(m.content, dropped) });
        break;
      case 'assistant': {
        const parts: Part[] = [];
        const reasoning = str(m.reasoning_content);
        if (reasoning) parts.push({ type: 'reasoning', text: reasoning });
        const text = typeof m.content === 'string' ? m.content : asArray(m.content).map((p) => str(asRecord(p).text) ?? str(asRecord(p).refusal) ?? '').join('');
        if (text) parts.push({ type: 'text', text });
        for (const call of asArray(m.tool_calls)) {
          const c = asRecord(call);
          const fn = asRecord(c.function);
          parts.push({ type: 'tool_call', id: str(c.id) ?? '', name: str(fn.name) ?? '', arguments: str(fn.arguments) ?? '' });
        }
        if (parts.length > 0) messages.push({ role: 'assistant', parts });
        break;
      }
      case 'tool': {
        const callId = str(m.tool_call_id) ?? '';
        const name = toolNameFor(messages, messages.length - 1, callId);
        appendPart(messages, 'user', { type: 'tool_result', callId, ...(name ? { name } : {}), content: textOf(m.content) });
        break;
      }
      default:
        dropped.add(`messages.${String(m.role)}`);
    }
  }
  return { ...(system.length > 0 ? { system: system.join('\n\n') } : {}), messages };
}

function decodeToolChoice(v: unknown): ToolChoice | undefined {
  if (v === 'auto' || v === 'none' || v === 'required') return { type: v };
  const name = str(asRecord(asRecord(v).function).name);
  return name ? { type: 'tool', name } : undefined;
}

function decodeResponseFormat(v: unknown): ResponseFormat | undefined {
  const f = asRecord(v);
  if (f.type === 'text' || f.type === 'json_object') return { type: f.type };
  if (f.type === 'json_schema') {
    const s = asRecord(f.json_schema);
    return compact({ type: 'json_schema' as const, name: str(s.name), schema: asRecord(s.schema), strict: typeof s.strict === 'boolean' ? s.strict : undefined });
  }
  return undefined;
}

export function decodeRequest(body: unknown): { value: CanonicalRequest; dropped: string[] } {
  const b = asRecord(body);
  const dropped = new Set(unreadKeys(b, READ));
  const { system, messages } = decodeMessages(asArray(b.messages), dropped);
  const { tools, builtinTools } = decodeOpenAiTools(b.tools, dropped, (t) => asRecord(t.function));
  const stop = typeof b.stop === 'string' ? [b.stop] : Array.isArray(b.stop) ? b.stop.filter((s): s is string => typeof s === 'string') : undefined;
  const effort = str(b.reasoning_effort);
  const value: CanonicalRequest = compact({
    model: str(b.model) ?? '',
    system,
    messages,
    tools: tools.length > 0 ? tools : undefined,
    builtinTools: builtinTools.length > 0 ? builtinTools : undefined,
    toolChoice: decodeToolChoice(b.tool_choice),
    parallelToolCalls: typeof b.parallel_tool_calls === 'boolean' ? b.parallel_tool_calls : undefined,
    responseFormat: decodeResponseFormat(b.response_format),
    temperature: num(b.temperature),
    topP: num(b.top_p),
    stop: stop && stop.length > 0 ? stop : undefined,
    maxOutputTokens: num(b.max_completion_tokens) ?? num(b.max_tokens),
    reasoning: effort && OPENAI_EFFORTS.has(effort) ? { effort: effort as ReasoningEffort } : undefined,
    stream: b.stream === true,
  });
  if (effort && !OPENAI_EFFORTS.has(effort)) dropped.add('reasoning_effort');
  return { value, dropped: [...dropped] };
}

/** Kept here for the importers of the translator's old surface; the rule lives in `shared.ts`. */
export { effortForBudget } from './shared';

export function encodeRequest(request: CanonicalRequest, options: { model: string }): { value: Json; dropped: string[] } {
  const dropped = new Set<string>();
  // The gateway's own chat API takes built-in tools; vendors' chat-completions APIs do not.
  dropBuiltinTools(request, dropped);
  const messages: Json[] = [];
  if (request.system !== undefined) messages.push({ role: 'system', content: request.system });
  for (const message of request.messages) {
    if (message.role === 'assistant') {
      const text = message.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      const calls = message.parts.flatMap((p) =>
        p.type === 'tool_call' ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }] : [],
      );
      // Earlier turns' reasoning is not part of a chat request (OpenAI keeps it server-side).
      messages.push({ role: 'assistant', content: text === '' && calls.length > 0 ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      continue;
    }
    // Results first: they must follow the assistant message that made the calls.
    for (const p of message.parts) {
      if (p.type !== 'tool_result') continue;
      if (p.isError) dropped.add('tool_result.is_error');
      messages.push({ role: 'tool', tool_call_id: p.callId, content: p.content });
    }
    const content = message.parts.flatMap((p): Json[] =>
      p.type === 'text'
        ? [{ type: 'text', text: p.text }]
        : p.type === 'image'
          ? [{ type: 'image_url', image_url: compact({ url: imageToUrl(p.source), detail: p.detail }) }]
          : [],
    );
    if (content.length === 0) continue;
    messages.push({ role: 'user', content: content.length === 1 && content[0]!.type === 'text' ? content[0]!.text : content });
  }
  const choice = request.toolChoice;
  const format = request.responseFormat;
  const effort = effortOf(request);
  const value = compact({
    model: options.model,
    messages,
    stream: request.stream ? true : undefined,
    // OpenAI's reasoning models refuse `max_tokens`; OpenAI-compatible vendors widely know only it.
    max_tokens: effort ? undefined : request.maxOutputTokens,
    max_completion_tokens: effort ? request.maxOutputTokens : undefined,
    temperature: request.temperature,
    top_p: request.topP,
    stop: request.stop ? [...request.stop] : undefined,
    tools: request.tools?.map((t) => ({ type: 'function', function: compact({ name: t.name, description: t.description, parameters: t.parameters }) })),
    tool_choice: !choice ? undefined : choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type,
    parallel_tool_calls: request.parallelToolCalls,
    response_format: !format
      ? undefined
      : format.type === 'json_schema'
        ? { type: 'json_schema', json_schema: compact({ name: format.name ?? 'response', schema: format.schema, strict: format.strict }) }
        : { type: format.type },
    reasoning_effort: effort,
  });
  return { value, dropped: [...dropped] };
}

const FINISH_IN: Record<string, FinishReason> = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', function_call: 'tool_calls', content_filter: 'content_filter' };
const finishIn = (v: unknown): FinishReason => FINISH_IN[String(v)] ?? 'stop';
/** Chat has no error finish: a failed answer is cut or answered with an error chunk instead. */
const finishOut = (reason: FinishReason): string => (reason === 'error' ? 'stop' : reason);

export function usageOut(usage: Usage): Json {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.promptTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  };
}

export function decodeResponse(body: unknown): CanonicalResponse {
  const b = asRecord(body);
  const choice = asRecord(asArray(b.choices)[0]);
  const message = asRecord(choice.message);
  const content: OutputPart[] = [];
  const reasoning = str(message.reasoning_content);
  if (reasoning) content.push({ type: 'reasoning', text: reasoning });
  const text = str(message.content);
  if (text) content.push({ type: 'text', text });
  for (const call of asArray(message.tool_calls)) {
    const c = asRecord(call);
    const fn = asRecord(c.function);
    content.push({ type: 'tool_call', id: str(c.id) ?? '', name: str(fn.name) ?? '', arguments: str(fn.arguments) ?? '' });
  }
  return compact({
    id: str(b.id) ?? '',
    model: str(b.model) ?? '',
    created: num(b.created),
    content,
    finishReason: finishIn(choice.finish_reason),
    usage: openAiUsage(asRecord(b.usage) as never),
  });
}

export function encodeResponse(response: CanonicalResponse, context: AnswerContext): Json {
  const text = response.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  const reasoning = response.content.flatMap((p) => (p.type === 'reasoning' ? [p.text] : [])).join('');
  const calls = response.content.flatMap((p) =>
    p.type === 'tool_call' ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }] : [],
  );
  return compact({
    id: response.id,
    object: 'chat.completion',
    created: response.created ?? context.created,
    model: context.model,
    choices: [
      {
        index: 0,
        message: compact({
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          refusal: null,
          reasoning_content: reasoning || undefined,
          tool_calls: calls.length > 0 ? calls : undefined,
        }),
        logprobs: null,
        finish_reason: finishOut(response.finishReason),
      },
    ],
    usage: response.usage ? usageOut(response.usage) : undefined,
  });
}

export function streamDecoder(): StreamDecoder {
  let started = false;
  const calls = new OpenCalls();
  /** The wire's tool-call index → canonical index of the call it currently streams. */
  const byWireIndex = new Map<number, number>();
  return {
    push(event: WireEvent): CanonicalEvent[] {
      const chunk = eventData(event.data);
      if (!chunk) return [];
      const out: CanonicalEvent[] = [];
      if (isRecord(chunk.error)) {
        const e = chunk.error;
        return [compact({ type: 'error' as const, message: str(e.message) ?? 'upstream error', code: str(e.code) ?? str(e.type) })];
      }
      if (!started) {
        started = true;
        out.push(compact({ type: 'start' as const, id: str(chunk.id) ?? '', model: str(chunk.model) ?? '', created: num(chunk.created) }));
      }
      for (const c of asArray(chunk.choices)) {
        const choice = asRecord(c);
        if ((num(choice.index) ?? 0) !== 0) continue;
        const delta = asRecord(choice.delta);
        const reasoning = str(delta.reasoning_content) ?? str(delta.reasoning);
        if (reasoning) out.push({ type: 'reasoning_delta', text: reasoning });
        const text = str(delta.content);
        if (text) out.push({ type: 'text_delta', text });
        for (const call of asArray(delta.tool_calls)) {
          const tc = asRecord(call);
          const fn = asRecord(tc.function);
          const wireIndex = num(tc.index) ?? 0;
          let index = byWireIndex.get(wireIndex);
          if (index === undefined || str(tc.id)) {
            // OpenAI streams calls one after the other: a new call means the earlier ones are whole.
            out.push(...calls.endAll());
            index = calls.start();
            byWireIndex.set(wireIndex, index);
            out.push({ type: 'tool_call_start', index, id: str(tc.id) ?? `call_${index}`, name: str(fn.name) ?? '' });
          }
          const args = str(fn.arguments);
          if (args) out.push({ type: 'tool_call_delta', index, arguments: args });
        }
        if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
          out.push(...calls.endAll(), { type: 'finish', reason: finishIn(choice.finish_reason) });
        }
      }
      if (isRecord(chunk.usage)) {
        const usage = openAiUsage(chunk.usage as never);
        if (usage) out.push({ type: 'usage', usage });
      }
      return out;
    },
    end: () => calls.endAll(),
  };
}

export function streamEncoder(context: AnswerContext): StreamEncoder {
  let id = '';
  let created = context.created;
  let started = false;
  let finished = false;
  let usage: Usage | null = null;
  /** What `delta.content` carried last: an image stands apart from text by a blank line. */
  let content: 'none' | 'text' | 'image' = 'none';
  const frame = (object: Json): WireEvent => ({ event: undefined, data: JSON.stringify(object) });
  const chunk = (delta: Json, finishReason: string | null = null): WireEvent =>
    frame({
      id,
      object: 'chat.completion.chunk',
      created,
      model: context.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      // With include_usage OpenAI sends `usage: null` on every chunk before the usage chunk.
      ...(context.includeUsage ? { usage: null } : {}),
    });
  const start = (event?: { id: string; created?: number }): WireEvent[] => {
    if (started) return [];
    started = true;
    id = event?.id || `chatcmpl-${context.created}`;
    created = event?.created ?? context.created;
    return [chunk({ role: 'assistant', content: '' })];
  };
  return {
    push(event) {
      if (event.type === 'start') return start(event);
      if (event.type === 'usage') {
        usage = event.usage;
        return [];
      }
      const out = start();
      switch (event.type) {
        case 'text_delta':
          out.push(chunk({ content: content === 'image' ? `\n\n${event.text}` : event.text }));
          content = 'text';
          break;
        case 'image':
          // The spec's chat streams: the built-in tool's image as markdown in `delta.content`, one chunk.
          out.push(chunk({ content: `${content === 'none' ? '' : '\n\n'}![image](data:${event.mediaType};base64,${event.data})` }));
          content = 'image';
          break;
        case 'reasoning_delta':
          out.push(chunk({ reasoning_content: event.text }));
          break;
        case 'tool_call_start':
          out.push(chunk({ tool_calls: [{ index: event.index, id: event.id, type: 'function', function: { name: event.name, arguments: '' } }] }));
          break;
        case 'tool_call_delta':
          out.push(chunk({ tool_calls: [{ index: event.index, function: { arguments: event.arguments } }] }));
          break;
        case 'finish':
          if (!finished) out.push(chunk({}, finishOut(event.reason)));
          finished = true;
          break;
        case 'error':
          // What the spec's chat streams send on a failure: an error chunk, and no [DONE].
          out.push(frame({ error: { message: event.message, type: 'api_error', code: 'upstream_error' } }));
          finished = false;
          break;
        default:
          break;
      }
      return out;
    },
    end() {
      if (!finished) return [];
      const out: WireEvent[] = [];
      if (context.includeUsage && usage) out.push(frame({ id, object: 'chat.completion.chunk', created, model: context.model, choices: [], usage: usageOut(usage) }));
      out.push({ event: undefined, data: '[DONE]' });
      return out;
    },
  };
}

export const chatCompletionsTranslator: ProtocolTranslator = {
  protocol: 'chat-completions',
  builtinTools: { reads: ['image_generation'], sends: [] },
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder,
  streamEncoder,
};
