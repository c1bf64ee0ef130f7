/** OpenAI Responses requests ⇄ canonical requests: `input` items, tools, `text.format`, reasoning. */
import type { CanonicalRequest, Message, ReasoningEffort, ResponseFormat, ToolChoice } from './canonical';
import {
  appendPart,
  asArray,
  asRecord,
  compact,
  decodeOpenAiTools,
  effortOf,
  HISTORY_REASONING,
  imageFromUrl,
  imageToUrl,
  num,
  OPENAI_EFFORTS,
  str,
  textOf,
  unreadKeys,
  type Json,
} from './shared';

const READ = ['model', 'input', 'instructions', 'stream', 'max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'text', 'reasoning'];

function decodeContent(content: unknown, role: Message['role'], messages: Message[], dropped: Set<string>): void {
  if (typeof content === 'string') {
    appendPart(messages, role, { type: 'text', text: content });
    return;
  }
  for (const item of asArray(content)) {
    const p = asRecord(item);
    if (p.type === 'input_text' || p.type === 'output_text') appendPart(messages, role, { type: 'text', text: str(p.text) ?? '' });
    else if (p.type === 'refusal') appendPart(messages, role, { type: 'text', text: str(p.refusal) ?? '' });
    else if (p.type === 'input_image' && str(p.image_url)) {
      const detail = str(p.detail);
      // `auto` is the default: the same image whether or not the client spelled it out.
      appendPart(messages, role, { type: 'image', source: imageFromUrl(str(p.image_url)!), ...(detail && detail !== 'auto' ? { detail } : {}) });
    } else dropped.add(`input.content.${String(p.type)}${p.type === 'input_image' ? '.file_id' : ''}`);
  }
}

function decodeToolChoice(v: unknown): ToolChoice | undefined {
  if (v === 'auto' || v === 'none' || v === 'required') return { type: v };
  const c = asRecord(v);
  return c.type === 'function' && str(c.name) ? { type: 'tool', name: str(c.name)! } : undefined;
}

function decodeFormat(text: unknown, dropped: Set<string>): ResponseFormat | undefined {
  const t = asRecord(text);
  for (const key of unreadKeys(t, ['format'])) dropped.add(`text.${key}`);
  const f = asRecord(t.format);
  if (f.type === 'text' || f.type === 'json_object') return { type: f.type };
  if (f.type === 'json_schema') return compact({ type: 'json_schema' as const, name: str(f.name), schema: asRecord(f.schema), strict: typeof f.strict === 'boolean' ? f.strict : undefined });
  return undefined;
}

export function decodeRequest(body: unknown): { value: CanonicalRequest; dropped: string[] } {
  const b = asRecord(body);
  const dropped = new Set(unreadKeys(b, READ));
  const system: string[] = [];
  if (typeof b.instructions === 'string') system.push(b.instructions);
  const messages: Message[] = [];
  if (typeof b.input === 'string') messages.push({ role: 'user', parts: [{ type: 'text', text: b.input }] });
  for (const entry of asArray(b.input)) {
    const item = asRecord(entry);
    const type = item.type ?? 'message';
    if (type === 'message') {
      if (item.role === 'system' || item.role === 'developer') system.push(textOf(item.content));
      else decodeContent(item.content, item.role === 'assistant' ? 'assistant' : 'user', messages, dropped);
    } else if (type === 'function_call') {
      appendPart(messages, 'assistant', { type: 'tool_call', id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: str(item.arguments) ?? '' });
    } else if (type === 'function_call_output') {
      const callId = str(item.call_id) ?? '';
      let name: string | undefined;
      for (const m of messages) for (const p of m.parts) if (p.type === 'tool_call' && p.id === callId) name = p.name;
      appendPart(messages, 'user', { type: 'tool_result', callId, ...(name ? { name } : {}), content: textOf(item.output) });
    } else if (type === 'reasoning') {
      // Kept even without text (Codex's items may carry only `encrypted_content`): the encoders name what they cannot send back.
      const text = [...asArray(item.summary), ...asArray(item.content)].map((s) => str(asRecord(s).text) ?? '').join('');
      appendPart(messages, 'assistant', { type: 'reasoning', text });
    } else dropped.add(`input.${String(type)}`);
  }
  const { tools, builtinTools } = decodeOpenAiTools(b.tools, dropped, (t) => t);
  const reasoning = asRecord(b.reasoning);
  const effort = str(reasoning.effort);
  if (reasoning.summary !== undefined && reasoning.summary !== null) dropped.add('reasoning.summary');
  // `none` and `xhigh` (Codex on gpt-5.1-codex-max) have no counterpart in the canonical efforts.
  if (effort && !OPENAI_EFFORTS.has(effort)) dropped.add('reasoning.effort');
  const toolChoice = decodeToolChoice(b.tool_choice);
  if (b.tool_choice !== undefined && b.tool_choice !== null && !toolChoice) dropped.add('tool_choice');
  const value: CanonicalRequest = compact({
    model: str(b.model) ?? '',
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages,
    tools: tools.length > 0 ? tools : undefined,
    builtinTools: builtinTools.length > 0 ? builtinTools : undefined,
    toolChoice,
    parallelToolCalls: typeof b.parallel_tool_calls === 'boolean' ? b.parallel_tool_calls : undefined,
    responseFormat: decodeFormat(b.text, dropped),
    temperature: num(b.temperature),
    topP: num(b.top_p),
    maxOutputTokens: num(b.max_output_tokens),
    reasoning: effort && OPENAI_EFFORTS.has(effort) ? { effort: effort as ReasoningEffort } : undefined,
    stream: b.stream === true,
  });
  return { value, dropped: [...dropped] };
}

/** A tool choice as Responses writes it, in a request and in the response object that echoes it. */
export const toolChoiceOut = (choice: ToolChoice): Json | string => (choice.type === 'tool' ? { type: 'function', name: choice.name } : choice.type);

/** `text.format` as Responses writes it, in a request and in the response object that echoes it. */
export const formatOut = (format: ResponseFormat): Json =>
  format.type === 'json_schema' ? compact({ type: 'json_schema', name: format.name ?? 'response', schema: format.schema, strict: format.strict }) : { type: format.type };

export function encodeRequest(request: CanonicalRequest, options: { model: string }): { value: Json; dropped: string[] } {
  const dropped = new Set<string>();
  const input: Json[] = [];
  for (const message of request.messages) {
    if (message.role === 'assistant') {
      for (const p of message.parts) {
        // Reasoning items need OpenAI's own ids or encrypted content: another vendor's cannot be sent back.
        if (p.type === 'reasoning') dropped.add(HISTORY_REASONING);
        else if (p.type === 'text' && p.text !== '') input.push({ type: 'message', role: 'assistant', content: p.text });
        else if (p.type === 'tool_call') input.push({ type: 'function_call', call_id: p.id, name: p.name, arguments: p.arguments });
      }
      continue;
    }
    for (const p of message.parts) {
      if (p.type !== 'tool_result') continue;
      if (p.isError) dropped.add('tool_result.is_error');
      input.push({ type: 'function_call_output', call_id: p.callId, output: p.content });
    }
    const content = message.parts.flatMap((p): Json[] =>
      p.type === 'text'
        ? [{ type: 'input_text', text: p.text }]
        : p.type === 'image'
          ? [{ type: 'input_image', image_url: imageToUrl(p.source), detail: p.detail ?? 'auto' }]
          : [],
    );
    if (content.length > 0) input.push({ type: 'message', role: 'user', content });
  }
  if (request.stop) dropped.add('stop');
  const format = request.responseFormat;
  const choice = request.toolChoice;
  const effort = effortOf(request);
  const tools: Json[] = [
    // Responses makes function tools strict by default; a schema written for another vendor may not be.
    ...(request.tools ?? []).map((t) => compact({ type: 'function', name: t.name, description: t.description, parameters: t.parameters, strict: false })),
    ...(request.builtinTools ?? []).map((t) => ({ ...t.options, type: t.type })),
  ];
  const value = compact({
    model: options.model,
    instructions: request.system,
    input,
    stream: request.stream ? true : undefined,
    max_output_tokens: request.maxOutputTokens,
    temperature: request.temperature,
    top_p: request.topP,
    // Responses makes function tools strict by default; a schema written for another vendor may not be.
    tools: tools.length > 0 ? tools : undefined,
    tool_choice: choice ? toolChoiceOut(choice) : undefined,
    parallel_tool_calls: request.parallelToolCalls,
    text: format ? { format: formatOut(format) } : undefined,
    reasoning: effort ? { effort } : undefined,
  });
  return { value, dropped: [...dropped] };
}
