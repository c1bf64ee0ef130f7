/** Anthropic Messages streams ⇄ canonical events: message_start, content_block_start/delta/stop (one open
 * block at a time), message_delta, message_stop, error. */
import { anthropicUsage } from '../protocols/messages';
import { FINISH_IN, FINISH_OUT, usageOut } from './messages-answer';
import type { AnswerContext, CanonicalEvent, FinishReason, StreamDecoder, StreamEncoder, Usage, WireEvent } from './canonical';
import { asRecord, compact, eventData, num, OpenCalls, str, type Json } from './shared';

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
