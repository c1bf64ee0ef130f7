/** OpenAI Chat Completions answers ⇄ canonical answers: `chat.completion`, its finish reasons and usage. */
import { openAiUsage } from '../protocols/chat-completions';
import type { AnswerContext, CanonicalResponse, FinishReason, OutputPart, Usage } from './canonical';
import { asArray, asRecord, compact, num, str, type Json } from './shared';

const FINISH_IN: Record<string, FinishReason> = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', function_call: 'tool_calls', content_filter: 'content_filter' };
export const finishIn = (v: unknown): FinishReason => FINISH_IN[String(v)] ?? 'stop';
/** Chat has no error finish: a failed answer is cut or answered with an error chunk instead. */
export const finishOut = (reason: FinishReason): string => (reason === 'error' ? 'stop' : reason);

export function usageOut(usage: Usage): Json {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.promptTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  };
}

export function decodeResponse(body: unknown): CanonicalResponse {
  const b = asRecord(body);
  const choice = asRecord(asArray(b.choices)[0]);
  const message = asRecord(choice.message);
  const content: OutputPart[] = [];
  const reasoning = str(message.reasoning_content);
  if (reasoning) content.push({ type: 'reasoning', text: reasoning });
  const text = str(message.content);
  if (text) content.push({ type: 'text', text });
  for (const call of asArray(message.tool_calls)) {
    const c = asRecord(call);
    const fn = asRecord(c.function);
    content.push({ type: 'tool_call', id: str(c.id) ?? '', name: str(fn.name) ?? '', arguments: str(fn.arguments) ?? '' });
  }
  return compact({
    id: str(b.id) ?? '',
    model: str(b.model) ?? '',
    created: num(b.created),
    content,
    finishReason: finishIn(choice.finish_reason),
    usage: openAiUsage(asRecord(b.usage) as never),
  });
}

export function encodeResponse(response: CanonicalResponse, context: AnswerContext): Json {
  const text = response.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  const reasoning = response.content.flatMap((p) => (p.type === 'reasoning' ? [p.text] : [])).join('');
  const calls = response.content.flatMap((p) =>
    p.type === 'tool_call' ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }] : [],
  );
  return compact({
    id: response.id,
    object: 'chat.completion',
    created: response.created ?? context.created,
    model: context.model,
    choices: [
      {
        index: 0,
        message: compact({
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          refusal: null,
          reasoning_content: reasoning || undefined,
          tool_calls: calls.length > 0 ? calls : undefined,
        }),
        logprobs: null,
        finish_reason: finishOut(response.finishReason),
      },
    ],
    usage: response.usage ? usageOut(response.usage) : undefined,
  });
}
