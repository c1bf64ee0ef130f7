/**
 * Anthropic Messages ⇄ canonical. Wire reference: docs.anthropic.com/en/api/messages and
 * /en/docs/build-with-claude/streaming (message_start, content_block_start/delta/stop,
 * message_delta, message_stop, error).
 */
import { anthropicUsage } from '../protocols/messages';
import type {
  AnswerContext,
  CanonicalEvent,
  CanonicalRequest,
  CanonicalResponse,
  FinishReason,
  FunctionTool,
  Message,
  OutputPart,
  Part,
  ProtocolTranslator,
  RequestOptions,
  StreamDecoder,
  StreamEncoder,
  ToolChoice,
  Usage,
  WireEvent,
} from './canonical';
import { argumentsObject, asArray, asRecord, budgetOf, compact, dropBuiltinTools, eventData, num, OpenCalls, str, textOf, unreadKeys, type Json } from './shared';

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
    tools.push(compact({ name: str(t.name) ?? '', description: str(t.description), parameters: asRecord(t.input_schema) }));
  }
  const choice = asRecord(b.tool_choice);
  const thinking = asRecord(b.thinking);
  const budget = thinking.type === 'enabled' ? num(thinking.budget_tokens) : undefined;
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

const FINISH_IN: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};
const FINISH_OUT: Record<FinishReason, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal', error: 'end_turn' };

/** The gateway's prompt includes cache reads and writes; Anthropic's `input_tokens` does not. */
export function usageOut(usage: Usage): Json {
  return {
    input_tokens: usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cachedTokens,
    output_tokens: usage.outputTokens,
  };
}

export function decodeResponse(body: unknown): CanonicalResponse {
  const b = asRecord(body);
  const content: OutputPart[] = [];
  for (const item of asArray(b.content)) {
    const block = asRecord(item);
    if (block.type === 'text') content.push({ type: 'text', text: str(block.text) ?? '' });
    else if (block.type === 'tool_use') content.push({ type: 'tool_call', id: str(block.id) ?? '', name: str(block.name) ?? '', arguments: JSON.stringify(block.input ?? {}) });
    else if (block.type === 'thinking') content.push(compact({ type: 'reasoning' as const, text: str(block.thinking) ?? '', signature: str(block.signature) || undefined }));
  }
  return {
    id: str(b.id) ?? '',
    model: str(b.model) ?? '',
    content,
    finishReason: FINISH_IN[String(b.stop_reason)] ?? 'stop',
    usage: anthropicUsage(asRecord(b.usage) as never),
  };
}

function outputBlock(part: OutputPart): Json {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'tool_call') return { type: 'tool_use', id: part.id, name: part.name, input: argumentsObject(part.arguments) };
  return { type: 'thinking', thinking: part.text, signature: part.signature ?? '' };
}

export function encodeResponse(response: CanonicalResponse, context: AnswerContext): Json {
  return {
    id: response.id,
    type: 'message',
    role: 'assistant',
    model: context.model,
    content: response.content.map(outputBlock),
    stop_reason: FINISH_OUT[response.finishReason],
    stop_sequence: null,
    usage: usageOut(response.usage ?? { promptTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, outputTokens: 0, reasoningTokens: 0 }),
  };
}

export function streamDecoder(): StreamDecoder {
  const calls = new OpenCalls();
  /** Content block index → what it carries (a tool call: its canonical index). */
  const blocks = new Map<number, { kind: 'text' | 'thinking' | 'tool'; call?: number }>();
  let fields: Json = {};
  const merge = (usage: unknown) => {
    for (const [k, v] of Object.entries(asRecord(usage))) if (typeof v === 'number') fields = { ...fields, [k]: v };
  };
  return {
    push(event: WireEvent): CanonicalEvent[] {
      const data = eventData(event.data);
      if (!data) return [];
      const index = num(data.index) ?? 0;
      switch (data.type) {
        case 'message_start': {
          const message = asRecord(data.message);
          merge(message.usage);
          return [{ type: 'start', id: str(message.id) ?? '', model: str(message.model) ?? '' }];
        }
        case 'content_block_start': {
          const block = asRecord(data.content_block);
          if (block.type === 'tool_use') {
            const call = calls.start();
            blocks.set(index, { kind: 'tool', call });
            return [{ type: 'tool_call_start', index: call, id: str(block.id) ?? '', name: str(block.name) ?? '' }];
          }
          if (block.type === 'thinking') {
            blocks.set(index, { kind: 'thinking' });
            return str(block.thinking) ? [{ type: 'reasoning_delta', text: str(block.thinking)! }] : [];
          }
          blocks.set(index, { kind: 'text' });
          return str(block.text) ? [{ type: 'text_delta', text: str(block.text)! }] : [];
        }
        case 'content_block_delta': {
          const delta = asRecord(data.delta);
          const block = blocks.get(index);
          if (delta.type === 'text_delta' && str(delta.text)) return [{ type: 'text_delta', text: str(delta.text)! }];
          if (delta.type === 'thinking_delta' && str(delta.thinking)) return [{ type: 'reasoning_delta', text: str(delta.thinking)! }];
          if (delta.type === 'signature_delta' && str(delta.signature)) return [{ type: 'reasoning_signature', signature: str(delta.signature)! }];
          if (delta.type === 'input_json_delta' && block?.call !== undefined && str(delta.partial_json))
            return [{ type: 'tool_call_delta', index: block.call, arguments: str(delta.partial_json)! }];
          return [];
        }
        case 'content_block_stop': {
          const block = blocks.get(index);
          return block?.call !== undefined ? calls.end(block.call) : [];
        }
        case 'message_delta': {
          merge(data.usage);
          const out: CanonicalEvent[] = [...calls.endAll()];
          const stop = asRecord(data.delta).stop_reason;
          if (typeof stop === 'string') out.push({ type: 'finish', reason: FINISH_IN[stop] ?? 'stop' });
          const usage = anthropicUsage(fields as never);
          if (usage) out.push({ type: 'usage', usage });
          return out;
        }
        case 'error': {
          const error = asRecord(data.error);
          return [compact({ type: 'error' as const, message: str(error.message) ?? 'upstream error', code: str(error.type) })];
        }
        default:
          return [];
      }
    },
    end: () => calls.endAll(),
  };
}

export function streamEncoder(context: AnswerContext): StreamEncoder {
  let started = false;
  let next = 0;
  let open: { index: number; kind: 'text' | 'thinking' | 'tool'; call?: number } | null = null;
  const callBlocks = new Map<number, number>();
  let finish: FinishReason | null = null;
  let usage: Usage | null = null;
  const emit = (type: string, payload: Json): WireEvent => ({ event: type, data: JSON.stringify({ type, ...payload }) });
  const start = (id?: string): WireEvent[] => {
    if (started) return [];
    started = true;
    return [
      emit('message_start', {
        message: {
          id: id || `msg_${context.created}`,
          type: 'message',
          role: 'assistant',
          model: context.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // The translated upstream reports the prompt at the end: message_delta carries it.
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      }),
    ];
  };
  const close = (): WireEvent[] => {
    if (!open) return [];
    const index = open.index;
    open = null;
    return [emit('content_block_stop', { index })];
  };
  const openBlock = (kind: 'text' | 'thinking' | 'tool', block: Json, call?: number): WireEvent[] => {
    const out = close();
    open = { index: next++, kind, ...(call !== undefined ? { call } : {}) };
    out.push(emit('content_block_start', { index: open.index, content_block: block }));
    return out;
  };
  return {
    push(event) {
      if (event.type === 'start') return start(event.id);
      const out = start();
      switch (event.type) {
        case 'text_delta':
          if (open?.kind !== 'text') out.push(...openBlock('text', { type: 'text', text: '' }));
          out.push(emit('content_block_delta', { index: open!.index, delta: { type: 'text_delta', text: event.text } }));
          break;
        case 'reasoning_delta':
          if (open?.kind !== 'thinking') out.push(...openBlock('thinking', { type: 'thinking', thinking: '', signature: '' }));
          out.push(emit('content_block_delta', { index: open!.index, delta: { type: 'thinking_delta', thinking: event.text } }));
          break;
        case 'reasoning_signature':
          if (open?.kind === 'thinking') out.push(emit('content_block_delta', { index: open.index, delta: { type: 'signature_delta', signature: event.signature } }));
          break;
        case 'tool_call_start':
          out.push(...openBlock('tool', { type: 'tool_use', id: event.id, name: event.name, input: {} }, event.index));
          callBlocks.set(event.index, open!.index);
          break;
        case 'tool_call_delta': {
          // A delta for a call whose block already closed (an upstream interleaving calls) still
          // names its block: the SDKs accumulate by index.
          const index = callBlocks.get(event.index);
          if (index !== undefined) out.push(emit('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: event.arguments } }));
          break;
        }
        case 'tool_call_end':
          if (open?.kind === 'tool' && open.call === event.index) out.push(...close());
          break;
        case 'finish':
          finish = event.reason;
          break;
        case 'usage':
          usage = event.usage;
          break;
        case 'error':
          finish = null;
          out.push(emit('error', { error: { type: 'api_error', message: event.message } }));
          break;
      }
      return out;
    },
    end() {
      if (finish === null) return [];
      const u = usage ? usageOut(usage) : { output_tokens: 0 };
      return [...close(), emit('message_delta', { delta: { stop_reason: FINISH_OUT[finish], stop_sequence: null }, usage: u }), emit('message_stop', {})];
    },
  };
}

export const messagesTranslator: ProtocolTranslator = {
  protocol: 'messages',
  builtinTools: { reads: [], sends: [] },
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder,
  streamEncoder,
};
