import { z } from 'zod';
import { zodMessage } from '../../config/zod-message';
import type { ChatRequestInfo, ProtocolAdapter, StreamObserver, Usage } from '../contract';
import { isObject } from '../json';
import { isInvalidUsage, readCounts, summed, validUsage, type UsageReport } from '../usage';

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

const OPENAI_COUNTS = ['prompt_tokens', 'completion_tokens', 'prompt_tokens_details.cached_tokens', 'completion_tokens_details.reasoning_tokens'] as const;

/** OpenAI's `usage` (chat completions) as billed; `prompt_tokens` includes the cached tokens. */
export function readOpenAiUsage(raw: unknown): UsageReport {
  const c = readCounts(raw, 'prompt_tokens', OPENAI_COUNTS);
  if (c === null || isInvalidUsage(c)) return c;
  return summed({
    promptTokens: c.prompt_tokens,
    cachedTokens: c['prompt_tokens_details.cached_tokens'],
    cacheWriteTokens: 0,
    outputTokens: c.completion_tokens,
    reasoningTokens: c['completion_tokens_details.reasoning_tokens'],
  });
}

/** Valid usage or null (what the translators show a client). */
export const openAiUsage = (raw: unknown): Usage | null => validUsage(readOpenAiUsage(raw));

export { isObject };

/** Characters of a delivered text field (0 when it is not text). */
export const textLength = (value: unknown): number => (typeof value === 'string' ? value.length : 0);

export const openAiErrorMessage = (body: unknown): string | null => {
  const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
  return typeof message === 'string' ? message : null;
};

/** OpenAI Chat Completions, native. */
export const chatCompletions: ProtocolAdapter = {
  requestSchema: Body,
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
  usageOf: (response) => readOpenAiUsage(isObject(response) ? response.usage : undefined),
  errorMessage: openAiErrorMessage,

  observe(_info, body): StreamObserver {
    const clientWantsUsage = (body as Body).stream_options?.include_usage === true;
    let usage: UsageReport = null;
    let chars = 0;
    let done = false;
    // What a length stop repeats of the chunks seen: their id, model and time, and the choices.
    let head: { id: unknown; model: unknown; created: unknown } = { id: '', model: '', created: 0 };
    const indexes = new Set<number>();
    return {
      onEvent(event) {
        if (event.data === '[DONE]') {
          done = true;
          return true;
        }
        let chunk: unknown;
        try {
          chunk = JSON.parse(event.data);
        } catch {
          return true;
        }
        if (!isObject(chunk)) return true;
        if (typeof chunk.id === 'string') head = { id: chunk.id, model: chunk.model, created: chunk.created };
        const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
        for (const choice of choices) {
          if (isObject(choice) && typeof choice.index === 'number' && Number.isSafeInteger(choice.index) && indexes.size < 128) indexes.add(choice.index);
          const delta = isObject(choice) && isObject(choice.delta) ? choice.delta : {};
          chars += textLength(delta.content) + textLength(delta.reasoning_content);
          for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
            const fn = isObject(call) && isObject(call.function) ? call.function : {};
            chars += textLength(fn.arguments) + textLength(fn.name);
          }
        }
        // Every chunk may say `usage: null`; the last report is the total.
        if (chunk.usage !== undefined && chunk.usage !== null) usage = readOpenAiUsage(chunk.usage) ?? usage;
        // The usage-only chunk the gateway asked for is not shown to a client that did not.
        return !(chunk.usage && choices.length === 0 && !clientWantsUsage);
      },
      usage: () => usage,
      outputChars: () => chars,
      completed: () => done,
      lengthStop: () => [
        ...[...(indexes.size > 0 ? indexes : [0])].map((index) => ({
          event: undefined,
          data: JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index, delta: {}, finish_reason: 'length' }] }),
        })),
        { event: undefined, data: '[DONE]' },
      ],
    };
  },
};
