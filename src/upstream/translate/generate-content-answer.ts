/** Gemini generateContent answers ⇄ canonical answers: the candidate, its finish reason, usageMetadata
 * and the stable call ids Gemini does not give. */
import { geminiUsage } from '../protocols/generate-content';
import type { AnswerContext, CanonicalResponse, FinishReason, OutputPart, Usage } from './canonical';
import { argumentsObject, asArray, asRecord, compact, isRecord, str, type Json } from './shared';

const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'LANGUAGE']);

export function finishIn(reason: string, hasCalls: boolean): FinishReason {
  if (reason === 'STOP') return hasCalls ? 'tool_calls' : 'stop';
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED.has(reason)) return 'content_filter';
  return 'error';
}
export const FINISH_OUT: Record<FinishReason, string> = { stop: 'STOP', tool_calls: 'STOP', length: 'MAX_TOKENS', content_filter: 'SAFETY', error: 'OTHER' };

/** Gemini counts thoughts apart from the candidates; the gateway's output includes them. */
export function usageOut(usage: Usage): Json {
  return compact({
    promptTokenCount: usage.promptTokens,
    candidatesTokenCount: usage.outputTokens - usage.reasoningTokens,
    totalTokenCount: usage.promptTokens + usage.outputTokens,
    cachedContentTokenCount: usage.cachedTokens > 0 ? usage.cachedTokens : undefined,
    thoughtsTokenCount: usage.reasoningTokens > 0 ? usage.reasoningTokens : undefined,
  });
}

/** Gemini sends function calls without ids (or with its own): stable ids from the answer's id. */
export const callId = (responseId: string, index: number) => (responseId ? `call_${responseId}_${index}` : `call_${index}`);

export function decodeResponse(body: unknown): CanonicalResponse {
  const b = asRecord(Array.isArray(body) ? body[0] : body);
  const candidate = asRecord(asArray(b.candidates)[0]);
  const id = str(b.responseId) ?? '';
  const content: OutputPart[] = [];
  let calls = 0;
  for (const item of asArray(asRecord(candidate.content).parts)) {
    const p = asRecord(item);
    if (typeof p.text === 'string' && p.text !== '') content.push(p.thought === true ? { type: 'reasoning', text: p.text } : { type: 'text', text: p.text });
    else if (isRecord(p.functionCall))
      content.push({ type: 'tool_call', id: str(p.functionCall.id) ?? callId(id, calls++), name: str(p.functionCall.name) ?? '', arguments: JSON.stringify(p.functionCall.args ?? {}) });
  }
  const blocked = !candidate.finishReason && isRecord(b.promptFeedback) && b.promptFeedback.blockReason;
  return {
    id,
    model: str(b.modelVersion) ?? '',
    content,
    finishReason: blocked ? 'content_filter' : finishIn(str(candidate.finishReason) ?? 'STOP', content.some((p) => p.type === 'tool_call')),
    usage: geminiUsage(asRecord(b.usageMetadata) as never),
  };
}

function outputPart(part: OutputPart): Json {
  if (part.type === 'text') return { text: part.text };
  if (part.type === 'reasoning') return { text: part.text, thought: true };
  return { functionCall: { id: part.id, name: part.name, args: argumentsObject(part.arguments) } };
}

export function encodeResponse(response: CanonicalResponse, context: AnswerContext): Json {
  return compact({
    candidates: [{ content: { role: 'model', parts: response.content.map(outputPart) }, finishReason: FINISH_OUT[response.finishReason], index: 0 }],
    usageMetadata: response.usage ? usageOut(response.usage) : undefined,
    modelVersion: context.model,
    responseId: response.id,
  });
}
