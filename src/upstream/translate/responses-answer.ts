/** OpenAI Responses answers ⇄ canonical answers: the `response` object with its output items, status and usage
 * (the stream encoder builds the same object around what it streamed). */
import { responsesUsage } from '../protocols/responses';
import { formatOut, toolChoiceOut } from './responses-request';
import type { AnswerContext, CanonicalResponse, FinishReason, OutputPart, Usage } from './canonical';
import { asArray, asRecord, compact, num, str, type Json } from './shared';

export function usageOut(usage: Usage): Json {
  return {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.promptTokens + usage.outputTokens,
  };
}

export function finishOf(status: unknown, incomplete: unknown, hasCalls: boolean): FinishReason {
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
export const itemId = (prefix: string, responseId: string, index: number) => `${prefix}_${responseId.replace(/^resp_/, '')}_${index}`;

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
export function responseObject(id: string, context: AnswerContext, created: number, status: string, output: Json[], usage: Usage | null, finish: FinishReason | null): Json {
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
    text: { format: format ? formatOut(format) : { type: 'text' } },
    tool_choice: r?.toolChoice ? toolChoiceOut(r.toolChoice) : 'auto',
    tools: (r?.tools ?? []).map((t) => compact({ type: 'function', name: t.name, description: t.description ?? null, parameters: t.parameters, strict: false })),
    top_p: r?.topP ?? 1,
    truncation: 'disabled',
    usage: usage ? usageOut(usage) : null,
    metadata: {},
  };
}

export const statusOf = (finish: FinishReason | null) =>
  finish === 'length' || finish === 'content_filter' ? 'incomplete' : finish === 'error' ? 'failed' : finish === null ? 'in_progress' : 'completed';

export function encodeResponse(response: CanonicalResponse, context: AnswerContext): Json {
  return responseObject(response.id, context, response.created ?? context.created, statusOf(response.finishReason), outputItems(response.id, response.content), response.usage, response.finishReason);
}
