/** Anthropic Messages answers ⇄ canonical answers: the `message` object, stop reasons and usage. */
import { anthropicUsage } from '../protocols/messages';
import type { AnswerContext, CanonicalResponse, FinishReason, OutputPart, Usage } from './canonical';
import { argumentsObject, asArray, asRecord, compact, str, type Json } from './shared';

export const FINISH_IN: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};
export const FINISH_OUT: Record<FinishReason, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal', error: 'end_turn' };

/** The gateway's prompt includes cache reads and writes; Anthropic's `input_tokens` does not. Writes are
 * split by lifetime as Anthropic does (those without a known lifetime are 5-minute ones). */
export function usageOut(usage: Usage): Json {
  const oneHour = Math.min(usage.cacheWrite1hTokens ?? 0, usage.cacheWriteTokens);
  return {
    input_tokens: usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cachedTokens,
    ...(usage.cacheWriteTokens > 0 ? { cache_creation: { ephemeral_5m_input_tokens: usage.cacheWriteTokens - oneHour, ephemeral_1h_input_tokens: oneHour } } : {}),
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
