/** Gemini generateContent streams ⇄ canonical events: one partial GenerateContentResponse per `data:` line,
 * function calls sent whole, the finish reason and usageMetadata on the last chunk. */
import { geminiUsage } from '../protocols/generate-content';
import { callId, finishIn, FINISH_OUT, usageOut } from './generate-content-answer';
import type { AnswerContext, CanonicalEvent, FinishReason, StreamDecoder, StreamEncoder, Usage, WireEvent } from './canonical';
import { argumentsObject, asArray, asRecord, compact, eventData, isRecord, OpenCalls, str, type Json } from './shared';

export function streamDecoder(): StreamDecoder {
  let started = false;
  let finished = false;
  const calls = new OpenCalls();
  let id = '';
  return {
    push(event: WireEvent): CanonicalEvent[] {
      const chunk = eventData(event.data);
      if (!chunk) return [];
      if (isRecord(chunk.error)) {
        return [compact({ type: 'error' as const, message: str(chunk.error.message) ?? 'upstream error', code: str(chunk.error.status) })];
      }
      const out: CanonicalEvent[] = [];
      if (!started) {
        started = true;
        id = str(chunk.responseId) ?? '';
        out.push({ type: 'start', id, model: str(chunk.modelVersion) ?? '' });
      }
      const candidate = asRecord(asArray(chunk.candidates)[0]);
      for (const item of asArray(asRecord(candidate.content).parts)) {
        const p = asRecord(item);
        if (typeof p.text === 'string' && p.text !== '') out.push(p.thought === true ? { type: 'reasoning_delta', text: p.text } : { type: 'text_delta', text: p.text });
        else if (isRecord(p.functionCall)) {
          // Gemini streams each call whole.
          const index = calls.start();
          out.push(
            { type: 'tool_call_start', index, id: str(p.functionCall.id) ?? callId(id, index), name: str(p.functionCall.name) ?? '' },
            { type: 'tool_call_delta', index, arguments: JSON.stringify(p.functionCall.args ?? {}) },
            ...calls.end(index),
          );
        }
      }
      const reason = str(candidate.finishReason);
      if (reason && !finished) {
        finished = true;
        out.push({ type: 'finish', reason: finishIn(reason, calls.started > 0) });
      }
      // Every chunk may carry usageMetadata; the one with the finish reason has the totals.
      const usage = reason ? geminiUsage(asRecord(chunk.usageMetadata) as never) : null;
      if (usage) out.push({ type: 'usage', usage });
      return out;
    },
    end: () => calls.endAll(),
  };
}

export function streamEncoder(context: AnswerContext): StreamEncoder {
  let id = '';
  let finish: FinishReason | null = null;
  let usage: Usage | null = null;
  const calls = new Map<number, { id: string; name: string; arguments: string; sent: boolean }>();
  const chunk = (parts: Json[], extra: Json = {}, withUsage = false): WireEvent => ({
    event: undefined,
    data: JSON.stringify(
      compact({
        candidates: [{ content: { role: 'model', parts }, ...extra, index: 0 }],
        usageMetadata: withUsage && usage ? usageOut(usage) : undefined,
        modelVersion: context.model,
        responseId: id || undefined,
      }),
    ),
  });
  const sendCall = (index: number): WireEvent[] => {
    const call = calls.get(index);
    if (!call || call.sent) return [];
    call.sent = true;
    return [chunk([{ functionCall: { id: call.id, name: call.name, args: argumentsObject(call.arguments) } }])];
  };
  return {
    push(event) {
      switch (event.type) {
        case 'start':
          id = event.id;
          return [];
        case 'text_delta':
          return [chunk([{ text: event.text }])];
        case 'reasoning_delta':
          return [chunk([{ text: event.text, thought: true }])];
        case 'tool_call_start':
          calls.set(event.index, { id: event.id, name: event.name, arguments: '', sent: false });
          return [];
        case 'tool_call_delta': {
          const call = calls.get(event.index);
          if (call) call.arguments += event.arguments;
          return [];
        }
        case 'tool_call_end':
          // A Gemini function call is sent whole, once its arguments are complete.
          return sendCall(event.index);
        case 'finish':
          finish = event.reason;
          return [];
        case 'usage':
          usage = event.usage;
          return [];
        case 'error':
          finish = null;
          return [{ event: undefined, data: JSON.stringify({ error: { code: 503, message: event.message, status: 'UNAVAILABLE' } }) }];
        default:
          return [];
      }
    },
    end() {
      if (finish === null) return [];
      const out = [...calls.keys()].flatMap(sendCall);
      out.push(chunk([{ text: '' }], { finishReason: FINISH_OUT[finish] }, true));
      return out;
    },
  };
}
