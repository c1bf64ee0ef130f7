/** OpenAI Chat Completions requests ⇄ canonical requests: messages (system and developer joined, tool
 * messages as tool results), tools, `response_format`, `reasoning_effort`. */
import type { CanonicalRequest, Message, Part, ReasoningEffort, ResponseFormat, ToolChoice } from './canonical';
import {
  appendPart,
  asArray,
  asRecord,
  compact,
  decodeOpenAiTools,
  dropBuiltinTools,
  effortOf,
  HISTORY_REASONING,
  imageFromUrl,
  imageToUrl,
  num,
  OPENAI_EFFORTS,
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
  const toolChoice = decodeToolChoice(b.tool_choice);
  // `allowed_tools`, a custom tool: no counterpart in the canonical choices.
  if (b.tool_choice !== undefined && b.tool_choice !== null && !toolChoice) dropped.add('tool_choice');
  const value: CanonicalRequest = compact({
    model: str(b.model) ?? '',
    system,
    messages,
    tools: tools.length > 0 ? tools : undefined,
    builtinTools: builtinTools.length > 0 ? builtinTools : undefined,
    toolChoice,
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
      if (message.parts.some((p) => p.type === 'reasoning')) dropped.add(HISTORY_REASONING);
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
