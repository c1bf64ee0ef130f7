/** OpenAI Responses streams ⇄ canonical events: typed events with `sequence_number` in, output items with
 * their content-part / summary-part / argument events out, closed by `response.completed` (or incomplete / failed). */
import { responsesUsage } from '../protocols/responses';
import { finishOf, itemId, responseObject, statusOf } from './responses-answer';
import type { AnswerContext, CanonicalEvent, FinishReason, StreamDecoder, StreamEncoder, Usage, WireEvent } from './canonical';
import { asRecord, compact, eventData, num, OpenCalls, str, type Json } from './shared';

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
