import { z } from 'zod';
import type { ChatRequestInfo, ProtocolAdapter, StreamObserver, Usage } from '../contract';

/** OpenAI's own bound on `n`. */
export const MAX_CHOICES = 128;

const Message = z.looseObject({ role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']) });
const Tool = z.looseObject({ type: z.string() });
const Body = z.looseObject({
  model: z.string().min(1),
  messages: z.array(Message).min(1),
  stream: z.boolean().optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
  n: z.number().int().min(1).max(MAX_CHOICES).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  tools: z.array(Tool).optional(),
  tool_choice: z.union([z.string(), z.looseObject({ type: z.string() })]).optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  response_format: z.looseObject({ type: z.string() }).optional(),
});
type Body = z.infer<typeof Body>;

interface OpenAiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

export function openAiUsage(usage: OpenAiUsage | null | undefined): Usage | null {
  if (!usage || typeof usage.prompt_tokens !== 'number') return null;
  return {
    promptTokens: usage.prompt_tokens,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWriteTokens: 0,
    outputTokens: usage.completion_tokens ?? 0,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}

export function zodMessage(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
}

export const openAiErrorMessage = (body: unknown): string | null => {
  const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
  return typeof message === 'string' ? message : null;
};

/** OpenAI Chat Completions, native. */
export const chatCompletions: ProtocolAdapter = {
  protocol: 'chat-completions',
  shape: 'chat',
  forwardedHeaders: [],

  inspect(body) {
    const parsed = Body.safeParse(body);
    if (!parsed.success) return { invalid: zodMessage(parsed.error) };
    const b = parsed.data;
    const builtinTools = (b.tools ?? []).map((t) => t.type).filter((t) => t !== 'function');
    const stream = b.stream === true;
    if (builtinTools.length > 0 && !stream)
      return { invalid: `the built-in tool ${builtinTools[0]} requires stream: true on this endpoint` };
    return {
      model: b.model,
      stream,
      maxTokens: b.max_completion_tokens ?? b.max_tokens ?? null,
      choices: b.n ?? 1,
      promptDocument: b.messages,
      builtinTools,
    };
  },

  upstream(body, info: ChatRequestInfo, upstreamModel) {
    const b = body as Body;
    return {
      path: '/v1/chat/completions',
      // Usage is asked for on every stream, so a stream is billed on what the upstream counted.
      // (Object.assign where a field may be new: V8 builds `{ ...x, newField }` through a slow path.)
      body: info.stream
        ? Object.assign({}, b, { model: upstreamModel, stream_options: Object.assign({}, b.stream_options, { include_usage: true }) })
        : { ...b, model: upstreamModel },
    };
  },

  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),

  failureTail(info) {
    if (info.builtinTools.length === 0) return [];
    const error = { error: { message: 'the upstream stream failed before it finished', type: 'api_error', code: 'upstream_error' } };
    return [{ event: undefined, data: JSON.stringify(error) }, { event: undefined, data: '[DONE]' }];
  },
  usageOf: (response) => openAiUsage((response as { usage?: OpenAiUsage } | null)?.usage),
  errorMessage: openAiErrorMessage,

  observe(_info, body): StreamObserver {
    const clientWantsUsage = (body as Body).stream_options?.include_usage === true;
    let usage: Usage | null = null;
    let chars = 0;
    let done = false;
    return {
      onEvent(event) {
        if (event.data === '[DONE]') {
          done = true;
          return true;
        }
        let chunk: { usage?: OpenAiUsage | null; choices?: Array<{ delta?: { content?: string | null; reasoning_content?: string | null; tool_calls?: Array<{ function?: { arguments?: string; name?: string } }> } }> };
        try {
          chunk = JSON.parse(event.data);
        } catch {
          return true;
        }
        for (const choice of chunk.choices ?? []) {
          const delta = choice.delta;
          chars += (delta?.content?.length ?? 0) + (delta?.reasoning_content?.length ?? 0);
          for (const call of delta?.tool_calls ?? []) chars += (call.function?.arguments?.length ?? 0) + (call.function?.name?.length ?? 0);
        }
        if (chunk.usage) usage = openAiUsage(chunk.usage) ?? usage;
        // The usage-only chunk the gateway asked for is not shown to a client that did not.
        return !(chunk.usage && (chunk.choices?.length ?? 0) === 0 && !clientWantsUsage);
      },
      usage: () => usage,
      outputChars: () => chars,
      completed: () => done,
    };
  },
};
