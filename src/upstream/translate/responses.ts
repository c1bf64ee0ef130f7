/**
 * OpenAI Responses ⇄ canonical. Wire reference: platform.openai.com/docs/api-reference/responses
 * (request, the `response` object) and /responses-streaming (typed events with `sequence_number`).
 */
import { responsesUsage } from '../protocols/responses';
import type {
  AnswerContext,
  CanonicalEvent,
  CanonicalRequest,
  CanonicalResponse,
  FinishReason,
  Message,
  OutputPart,
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
  compact,
  decodeOpenAiTools,
  effortOf,
  eventData,
  imageFromUrl,
  imageToUrl,
  num,
  OPENAI_EFFORTS,
  OpenCalls,
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
      const text = [...asArray(item.summary), ...asArray(item.content)].map((s) => str(asRecord(s).text) ?? '').join('');
      if (text) appendPart(messages, 'assistant', { type: 'reasoning', text });
    } else dropped.add(`input.${String(type)}`);
  }
  const { tools, builtinTools } = decodeOpenAiTools(b.tools, dropped, (t) => t);
  const reasoning = asRecord(b.reasoning);
  const effort = str(reasoning.effort);
  if (reasoning.summary !== undefined && reasoning.summary !== null) dropped.add('reasoning.summary');
  const value: CanonicalRequest = compact({
    model: str(b.model) ?? '',
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages,
    tools: tools.length > 0 ? tools : undefined,
    builtinTools: builtinTools.length > 0 ? builtinTools : undefined,
    toolChoice: decodeToolChoice(b.tool_choice),
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

export function encodeRequest(request: CanonicalRequest, options: { model: string }): { value: Json; dropped: string[] } {
  const dropped = new Set<string>();
  const input: Json[] = [];
  for (const message of request.messages) {
    if (message.role === 'assistant') {
      for (const p of message.parts) {
        // Reasoning items need OpenAI's own ids or encrypted content: another vendor's cannot be sent back.
        if (p.type === 'text' && p.text !== '') input.push({ type: 'message', role: 'assistant', content: p.text });
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
    tool_choice: !choice ? undefined : choice.type === 'tool' ? { type: 'function', name: choice.name } : choice.type,
    parallel_tool_calls: request.parallelToolCalls,
    text: !format
      ? undefined
      : { format: format.type === 'json_schema' ? compact({ type: 'json_schema', name: format.name ?? 'response', schema: format.schema, strict: format.strict }) : { type: format.type } },
    reasoning: effort ? { effort } : undefined,
  });
  return { value, dropped: [...dropped] };
}

export function usageOut(usage: Usage): Json {
  return {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.promptTokens + usage.outputTokens,
  };
}

function finishOf(status: unknown, incomplete: unknown, hasCalls: boolean): FinishReason {
  if (status === 'incomplete') return str(asRecord(incomplete).reason) === 'content_filter' ? 'content_filter' : 'length';
  if (status === 'failed' || status === 'cancelled') return 'error';
  return hasCalls ? 'tool_calls' : 'stop';
}

export function decodeResponse(body: unknown): CanonicalResponse {
  const b = asRecord(body);
  const content: OutputPart[] = [];
  for (const entry of asArray(b.output)) {
    const item = asRecord(entry);
    if (item.type === 'message') {
      for (const c of asArray(item.content)) {
        const part = asRecord(c);
        const text = str(part.text) ?? str(part.refusal);
        if (text) content.push({ type: 'text', text });
      }
    } else if (item.type === 'function_call') {
      content.push({ type: 'tool_call', id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: str(item.arguments) ?? '' });
    } else if (item.type === 'reasoning') {
      const text = [...asArray(item.summary), ...asArray(item.content)].map((s) => str(asRecord(s).text) ?? '').join('');
      if (text) content.push({ type: 'reasoning', text });
    }
  }
  return compact({
    id: str(b.id) ?? '',
    model: str(b.model) ?? '',
    created: num(b.created_at),
    content,
    finishReason: finishOf(b.status, b.incomplete_details, content.some((p) => p.type === 'tool_call')),
    usage: responsesUsage(asRecord(b.usage) as never),
  });
}

/** Output item ids: Responses gives each item its own (`msg_`, `fc_`, `rs_`), derived here from the answer's id. */
const itemId = (prefix: string, responseId: string, index: number) => `${prefix}_${responseId.replace(/^resp_/, '')}_${index}`;

function outputItems(responseId: string, content: readonly OutputPart[]): Json[] {
  const items: Json[] = [];
  for (const part of content) {
    const last = items.at(-1);
    if (part.type === 'text') {
      if (last?.type === 'message') (last.content as Json[]).push({ type: 'output_text', text: part.text, annotations: [] });
      else items.push({ type: 'message', id: itemId('msg', responseId, items.length), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: part.text, annotations: [] }] });
    } else if (part.type === 'tool_call') {
      items.push({ type: 'function_call', id: itemId('fc', responseId, items.length), call_id: part.id, name: part.name, arguments: part.arguments, status: 'completed' });
    } else {
      items.push({ type: 'reasoning', id: itemId('rs', responseId, items.length), summary: [{ type: 'summary_text', text: part.text }] });
    }
  }
  return items;
}

/** The response object around an output: the request's settings echoed as Responses does. */
function responseObject(id: string, context: AnswerContext, created: number, status: string, output: Json[], usage: Usage | null, finish: FinishReason | null): Json {
  const r = context.request;
  const format = r?.responseFormat;
  return {
    id,
    object: 'response',
    created_at: created,
    status,
    error: finish === 'error' ? { code: 'server_error', message: 'the upstream failed' } : null,
    incomplete_details: status === 'incomplete' ? { reason: finish === 'content_filter' ? 'content_filter' : 'max_output_tokens' } : null,
    instructions: r?.system ?? null,
    max_output_tokens: r?.maxOutputTokens ?? null,
    model: context.model,
    output,
    parallel_tool_calls: r?.parallelToolCalls ?? true,
    previous_response_id: null,
    reasoning: { effort: r?.reasoning?.effort ?? null, summary: null },
    store: false,
    temperature: r?.temperature ?? 1,
    text: { format: format ? (format.type === 'json_schema' ? compact({ type: 'json_schema', name: format.name ?? 'response', schema: format.schema, strict: format.strict }) : { type: format.type }) : { type: 'text' } },
    tool_choice: !r?.toolChoice ? 'auto' : r.toolChoice.type === 'tool' ? { type: 'function', name: r.toolChoice.name } : r.toolChoice.type,
    tools: (r?.tools ?? []).map((t) => compact({ type: 'function', name: t.name, description: t.description ?? null, parameters: t.parameters, strict: false })),
    top_p: r?.topP ?? 1,
    truncation: 'disabled',
    usage: usage ? usageOut(usage) : null,
    metadata: {},
  };
}

const statusOf = (finish: FinishReason | null) =>
  finish === 'length' || finish === 'content_filter' ? 'incomplete' : finish === 'error' ? 'failed' : finish === null ? 'in_progress' : 'completed';

export function encodeResponse(response: CanonicalResponse, context: AnswerContext): Json {
  return responseObject(response.id, context, response.created ?? context.created, statusOf(response.finishReason), outputItems(response.id, response.content), response.usage, response.finishReason);
}

export function streamDecoder(): StreamDecoder {
  const calls = new OpenCalls();
  /** item id / output index of a function_call item → its canonical call, and whether arguments streamed. */
  const byItem = new Map<string, { index: number; streamed: boolean }>();
  const keyOf = (data: Json) => str(data.item_id) ?? str(asRecord(data.item).id) ?? `#${num(data.output_index) ?? 0}`;
  const ended = (data: Json): CanonicalEvent[] => {
    const response = asRecord(data.response);
    const out: CanonicalEvent[] = [...calls.endAll(), { type: 'finish', reason: finishOf(response.status, response.incomplete_details, calls.started > 0) }];
    const usage = responsesUsage(asRecord(response.usage) as never);
    if (usage) out.push({ type: 'usage', usage });
    return out;
  };
  return {
    push(event: WireEvent): CanonicalEvent[] {
      const data = eventData(event.data);
      if (!data) return [];
      const type = event.event ?? str(data.type);
      const delta = str(data.delta);
      switch (type) {
        case 'response.created': {
          const response = asRecord(data.response);
          return [compact({ type: 'start' as const, id: str(response.id) ?? '', model: str(response.model) ?? '', created: num(response.created_at) })];
        }
        case 'response.output_item.added': {
          const item = asRecord(data.item);
          if (item.type !== 'function_call') return [];
          const index = calls.start();
          const key = keyOf(data);
          byItem.set(key, { index, streamed: false });
          byItem.set(`#${num(data.output_index) ?? 0}`, byItem.get(key)!);
          return [{ type: 'tool_call_start', index, id: str(item.call_id) ?? '', name: str(item.name) ?? '' }];
        }
        case 'response.function_call_arguments.delta': {
          const call = byItem.get(keyOf(data)) ?? byItem.get(`#${num(data.output_index) ?? 0}`);
          if (!call || !delta) return [];
          call.streamed = true;
          return [{ type: 'tool_call_delta', index: call.index, arguments: delta }];
        }
        case 'response.output_item.done': {
          const item = asRecord(data.item);
          // The image tool's result: the finished image, base64 (`output_format`, PNG by default).
          if (item.type === 'image_generation_call')
            return typeof item.result === 'string' && item.result !== '' ? [{ type: 'image', mediaType: `image/${str(item.output_format) ?? 'png'}`, data: item.result }] : [];
          const call = item.type === 'function_call' ? byItem.get(keyOf(data)) : undefined;
          if (!call) return [];
          // An upstream that sends the arguments only whole (no deltas): they arrive here.
          const whole = !call.streamed && str(item.arguments) ? [{ type: 'tool_call_delta' as const, index: call.index, arguments: str(item.arguments)! }] : [];
          return [...whole, ...calls.end(call.index)];
        }
        case 'response.output_text.delta':
        case 'response.refusal.delta':
          return delta ? [{ type: 'text_delta', text: delta }] : [];
        case 'response.reasoning_summary_text.delta':
        case 'response.reasoning_text.delta':
          return delta ? [{ type: 'reasoning_delta', text: delta }] : [];
        case 'response.completed':
        case 'response.incomplete':
          return ended(data);
        case 'response.failed': {
          const error = asRecord(asRecord(data.response).error);
          return [compact({ type: 'error' as const, message: str(error.message) ?? 'the upstream response failed', code: str(error.code) })];
        }
        case 'error':
          return [compact({ type: 'error' as const, message: str(data.message) ?? 'upstream error', code: str(data.code) })];
        default:
          return [];
      }
    },
    end: () => calls.endAll(),
  };
}

export function streamEncoder(context: AnswerContext): StreamEncoder {
  let seq = 0;
  let id = '';
  let created = context.created;
  let started = false;
  let finish: FinishReason | null = null;
  let usage: Usage | null = null;
  const output: Json[] = [];
  /** The item receiving text or reasoning now, if any. */
  let open: { kind: 'message' | 'reasoning'; index: number; text: string } | null = null;
  const callItems = new Map<number, { index: number; arguments: string; done: boolean }>();
  const emit = (type: string, payload: Json): WireEvent => ({ event: type, data: JSON.stringify({ type, sequence_number: seq++, ...payload }) });
  const start = (event?: { id: string; created?: number }): WireEvent[] => {
    if (started) return [];
    started = true;
    id = event?.id || `resp_${context.created}`;
    created = event?.created ?? context.created;
    const response = responseObject(id, context, created, 'in_progress', [], null, null);
    return [emit('response.created', { response }), emit('response.in_progress', { response })];
  };
  const closeOpen = (): WireEvent[] => {
    if (!open) return [];
    const { kind, index, text } = open;
    open = null;
    const item = output[index]!;
    const itemIdValue = item.id as string;
    if (kind === 'message') {
      const part = { type: 'output_text', text, annotations: [] };
      output[index] = { ...item, status: 'completed', content: [part] };
      return [
        emit('response.output_text.done', { item_id: itemIdValue, output_index: index, content_index: 0, text, logprobs: [] }),
        emit('response.content_part.done', { item_id: itemIdValue, output_index: index, content_index: 0, part }),
        emit('response.output_item.done', { output_index: index, item: output[index] }),
      ];
    }
    const part = { type: 'summary_text', text };
    output[index] = { ...item, summary: [part] };
    return [
      emit('response.reasoning_summary_text.done', { item_id: itemIdValue, output_index: index, summary_index: 0, text }),
      emit('response.reasoning_summary_part.done', { item_id: itemIdValue, output_index: index, summary_index: 0, part }),
      emit('response.output_item.done', { output_index: index, item: output[index] }),
    ];
  };
  const openItem = (kind: 'message' | 'reasoning'): WireEvent[] => {
    const out = closeOpen();
    const index = output.length;
    const item =
      kind === 'message'
        ? { id: itemId('msg', id, index), type: 'message', status: 'in_progress', role: 'assistant', content: [] }
        : { id: itemId('rs', id, index), type: 'reasoning', summary: [] };
    output.push(item);
    open = { kind, index, text: '' };
    out.push(emit('response.output_item.added', { output_index: index, item }));
    if (kind === 'message')
      out.push(emit('response.content_part.added', { item_id: item.id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
    else out.push(emit('response.reasoning_summary_part.added', { item_id: item.id, output_index: index, summary_index: 0, part: { type: 'summary_text', text: '' } }));
    return out;
  };
  const closeCall = (call: number): WireEvent[] => {
    const c = callItems.get(call);
    if (!c || c.done) return [];
    c.done = true;
    const item: Json = { ...output[c.index]!, arguments: c.arguments, status: 'completed' };
    output[c.index] = item;
    return [
      emit('response.function_call_arguments.done', { item_id: item.id, output_index: c.index, arguments: c.arguments }),
      emit('response.output_item.done', { output_index: c.index, item }),
    ];
  };
  return {
    push(event) {
      if (event.type === 'start') return start(event);
      const out = start();
      switch (event.type) {
        case 'text_delta':
        case 'reasoning_delta': {
          const kind = event.type === 'text_delta' ? 'message' : 'reasoning';
          if (open?.kind !== kind) out.push(...openItem(kind));
          const current = open!;
          current.text += event.text;
          const itemIdValue = output[current.index]!.id;
          out.push(
            kind === 'message'
              ? emit('response.output_text.delta', { item_id: itemIdValue, output_index: current.index, content_index: 0, delta: event.text, logprobs: [] })
              : emit('response.reasoning_summary_text.delta', { item_id: itemIdValue, output_index: current.index, summary_index: 0, delta: event.text }),
          );
          break;
        }
        case 'tool_call_start': {
          out.push(...closeOpen());
          const index = output.length;
          const item = { id: itemId('fc', id, index), type: 'function_call', status: 'in_progress', call_id: event.id, name: event.name, arguments: '' };
          output.push(item);
          callItems.set(event.index, { index, arguments: '', done: false });
          out.push(emit('response.output_item.added', { output_index: index, item }));
          break;
        }
        case 'tool_call_delta': {
          const c = callItems.get(event.index);
          if (!c || c.done) break;
          c.arguments += event.arguments;
          out.push(emit('response.function_call_arguments.delta', { item_id: output[c.index]!.id, output_index: c.index, delta: event.arguments }));
          break;
        }
        case 'tool_call_end':
          out.push(...closeCall(event.index));
          break;
        case 'finish':
          finish = event.reason;
          break;
        case 'usage':
          usage = event.usage;
          break;
        case 'error':
          finish = null;
          out.push(emit('error', { code: event.code ?? 'server_error', message: event.message, param: null }));
          break;
        default:
          break;
      }
      return out;
    },
    end() {
      if (finish === null) return [];
      const out = closeOpen();
      for (const call of callItems.keys()) out.push(...closeCall(call));
      const status = statusOf(finish);
      const response = responseObject(id, context, created, status, output, usage, finish);
      out.push(emit(status === 'completed' ? 'response.completed' : status === 'incomplete' ? 'response.incomplete' : 'response.failed', { response }));
      return out;
    },
  };
}

export const responsesTranslator: ProtocolTranslator = {
  protocol: 'responses',
  builtinTools: { reads: ['image_generation'], sends: ['image_generation'] },
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder,
  streamEncoder,
};
