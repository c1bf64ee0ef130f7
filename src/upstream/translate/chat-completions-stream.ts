/** OpenAI Chat Completions streams ⇄ canonical events: `chat.completion.chunk` frames (role first,
 * `reasoning_content`, tool-call deltas by index, the usage chunk when asked for, `[DONE]`). */
import { openAiUsage } from '../protocols/chat-completions';
import { finishIn, finishOut, usageOut } from './chat-completions-answer';
import type { AnswerContext, CanonicalEvent, StreamDecoder, StreamEncoder, Usage, WireEvent } from './canonical';
import { asArray, asRecord, compact, eventData, isRecord, num, OpenCalls, str, type Json } from './shared';

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
