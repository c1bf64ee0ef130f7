/** Anthropic Messages requests ⇄ canonical requests: content blocks, tools, tool_choice, thinking budgets
 * and the temperature cap. */
import type { CanonicalRequest, FunctionTool, Message, Part, RequestOptions, ToolChoice } from './canonical';
import { argumentsObject, asArray, asRecord, budgetOf, compact, dropBuiltinTools, HISTORY_REASONING, num, str, textOf, unreadKeys, type Json } from './shared';

const READ = ['model', 'max_tokens', 'messages', 'system', 'stream', 'tools', 'tool_choice', 'temperature', 'top_p', 'stop_sequences', 'thinking'];

/** Anthropic's smallest thinking budget. */
const MIN_BUDGET = 1024;

function decodeBlocks(content: unknown, role: Message['role'], dropped: Set<string>): Part[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const parts: Part[] = [];
  for (const item of asArray(content)) {
    const b = asRecord(item);
    if (b.cache_control) dropped.add('messages.content.cache_control');
    switch (b.type) {
      case 'text':
        parts.push({ type: 'text', text: str(b.text) ?? '' });
        break;
      case 'image': {
        const s = asRecord(b.source);
        if (s.type === 'base64') parts.push({ type: 'image', source: { kind: 'base64', mediaType: str(s.media_type) ?? '', data: str(s.data) ?? '' } });
        else if (s.type === 'url') parts.push({ type: 'image', source: { kind: 'url', url: str(s.url) ?? '' } });
        else dropped.add(`messages.content.image.${String(s.type)}`);
        break;
      }
      case 'tool_use':
        parts.push({ type: 'tool_call', id: str(b.id) ?? '', name: str(b.name) ?? '', arguments: JSON.stringify(b.input ?? {}) });
        break;
      case 'tool_result': {
        if (asArray(b.content).some((c) => asRecord(c).type !== 'text')) dropped.add('messages.content.tool_result.image');
        if (asArray(b.content).some((c) => asRecord(c).cache_control)) dropped.add('messages.content.cache_control');
        parts.push(compact({ type: 'tool_result' as const, callId: str(b.tool_use_id) ?? '', content: textOf(b.content), isError: b.is_error === true ? true : undefined }));
        break;
      }
      case 'thinking':
        if (role === 'assistant') parts.push(compact({ type: 'reasoning' as const, text: str(b.thinking) ?? '', signature: str(b.signature) || undefined }));
        break;
      default:
        dropped.add(`messages.content.${String(b.type)}`);
    }
  }
  return parts;
}

function decodeToolChoice(v: unknown): ToolChoice | undefined {
  const c = asRecord(v);
  if (c.type === 'auto' || c.type === 'none') return { type: c.type };
  if (c.type === 'any') return { type: 'required' };
  if (c.type === 'tool' && str(c.name)) return { type: 'tool', name: str(c.name)! };
  return undefined;
}

export function decodeRequest(body: unknown): { value: CanonicalRequest; dropped: string[] } {
  const b = asRecord(body);
  const dropped = new Set(unreadKeys(b, READ));
  if (asArray(b.system).some((block) => asRecord(block).cache_control)) dropped.add('system.cache_control');
  const messages: Message[] = asArray(b.messages).map((item) => {
    const m = asRecord(item);
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    return { role, parts: decodeBlocks(m.content, role, dropped) };
  });
  const tools: FunctionTool[] = [];
  for (const tool of asArray(b.tools)) {
    const t = asRecord(tool);
    if (t.type !== undefined && t.type !== 'custom') {
      dropped.add(`tools.${String(t.type)}`);
      continue;
    }
    // Claude Code marks its last tool as a cache breakpoint (with `ttl: 1h` for long sessions).
    if (t.cache_control) dropped.add('tools.cache_control');
    tools.push(compact({ name: str(t.name) ?? '', description: str(t.description), parameters: asRecord(t.input_schema) }));
  }
  const choice = asRecord(b.tool_choice);
  const thinking = asRecord(b.thinking);
  const budget = thinking.type === 'enabled' ? num(thinking.budget_tokens) : undefined;
  // Only a budget translates (to a budget or an effort); `adaptive` (the model decides, Claude Code on
  // Opus 4.6 / Sonnet 4.6) has none, and `disabled` is what the other protocols do without one.
  if (b.thinking !== undefined && b.thinking !== null && thinking.type !== 'disabled' && budget === undefined) dropped.add(`thinking.${String(thinking.type)}`);
  const value: CanonicalRequest = compact({
    model: str(b.model) ?? '',
    system: b.system === undefined ? undefined : textOf(b.system),
    messages,
    tools: tools.length > 0 ? tools : undefined,
    toolChoice: decodeToolChoice(b.tool_choice),
    parallelToolCalls: choice.disable_parallel_tool_use === true ? false : undefined,
    temperature: num(b.temperature),
    topP: num(b.top_p),
    stop: asArray(b.stop_sequences).length > 0 ? asArray(b.stop_sequences).filter((s): s is string => typeof s === 'string') : undefined,
    maxOutputTokens: num(b.max_tokens),
    reasoning: budget !== undefined ? { budgetTokens: budget } : undefined,
    stream: b.stream === true,
  });
  return { value, dropped: [...dropped] };
}

function encodeParts(message: Message, dropped: Set<string>): Json[] {
  const blocks: Json[] = [];
  // Anthropic wants tool results before anything else in their user message.
  const ordered = message.role === 'user' ? [...message.parts.filter((p) => p.type === 'tool_result'), ...message.parts.filter((p) => p.type !== 'tool_result')] : message.parts;
  for (const p of ordered) {
    switch (p.type) {
      case 'text':
        // Anthropic refuses empty text blocks.
        if (p.text !== '') blocks.push({ type: 'text', text: p.text });
        break;
      case 'image':
        if (p.detail) dropped.add('image.detail');
        blocks.push({
          type: 'image',
          source: p.source.kind === 'url' ? { type: 'url', url: p.source.url } : { type: 'base64', media_type: p.source.mediaType, data: p.source.data },
        });
        break;
      case 'tool_call':
        blocks.push({ type: 'tool_use', id: p.id, name: p.name, input: argumentsObject(p.arguments) });
        break;
      case 'tool_result':
        blocks.push(compact({ type: 'tool_result', tool_use_id: p.callId, content: p.content, is_error: p.isError ? true : undefined }));
        break;
      case 'reasoning':
        // Only Anthropic's own signed thinking can be sent back; another vendor's reasoning cannot.
        if (p.signature && message.role === 'assistant') blocks.push({ type: 'thinking', thinking: p.text, signature: p.signature });
        else dropped.add(HISTORY_REASONING);
        break;
    }
  }
  return blocks;
}

export function encodeRequest(request: CanonicalRequest, options: RequestOptions): { value: Json; dropped: string[] } {
  const dropped = new Set<string>();
  dropBuiltinTools(request, dropped);
  const maxTokens = request.maxOutputTokens ?? options.defaultMaxTokens;
  const messages = request.messages.flatMap((m) => {
    const content = encodeParts(m, dropped);
    return content.length > 0 ? [{ role: m.role, content }] : [];
  });
  let thinking: Json | undefined;
  if (request.reasoning) {
    const budget = budgetOf(request);
    // The budget must be at least 1024 and below max_tokens.
    const fitted = budget === undefined ? undefined : Math.min(budget, maxTokens - 1);
    if (fitted !== undefined && fitted >= MIN_BUDGET) thinking = { type: 'enabled', budget_tokens: fitted };
    else dropped.add('reasoning');
  }
  let temperature = request.temperature;
  // Anthropic's range is 0–1 (OpenAI's and Google's 0–2); with thinking on it takes none.
  if (temperature !== undefined && thinking) {
    dropped.add('temperature');
    temperature = undefined;
  } else if (temperature !== undefined) temperature = Math.min(temperature, 1);
  if (request.responseFormat && request.responseFormat.type !== 'text') dropped.add('response_format');
  // Anthropic takes a tool_choice only beside tools.
  const choice = request.tools?.length ? request.toolChoice : undefined;
  let toolChoice: Json | undefined = !choice
    ? undefined
    : choice.type === 'tool'
      ? { type: 'tool', name: choice.name }
      : { type: choice.type === 'required' ? 'any' : choice.type };
  if (request.parallelToolCalls === false && request.tools?.length && toolChoice?.type !== 'none') toolChoice = { ...(toolChoice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  const value = compact({
    model: options.model,
    max_tokens: maxTokens,
    system: request.system,
    messages,
    stream: request.stream ? true : undefined,
    temperature,
    top_p: request.topP,
    stop_sequences: request.stop ? [...request.stop] : undefined,
    tools: request.tools?.map((t) => compact({ name: t.name, description: t.description, input_schema: t.parameters })),
    tool_choice: toolChoice,
    thinking,
  });
  return { value, dropped: [...dropped] };
}
