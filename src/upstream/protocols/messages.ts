import { z } from 'zod';
import type { ProtocolAdapter, StreamObserver, Usage } from '../contract';
import { tokensFromChars } from '../pricing';
import { openAiErrorMessage, zodMessage } from './chat-completions';

/** The version sent upstream when the client sent none (what direct callers are told to send). */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

const Block = z.looseObject({ type: z.string().min(1) });
const Content = z.union([z.string(), z.array(Block)]);
const Message = z.looseObject({ role: z.enum(['user', 'assistant']), content: Content });
/** A client tool has a name and an `input_schema`; a server tool (`web_search_20250305`,
 * `bash_20250124`, ...) has a `type` of its own and is passed through as is. */
const Tool = z
  .looseObject({ name: z.string().min(1), type: z.string().optional(), input_schema: z.looseObject({}).optional() })
  .refine((t) => (t.type !== undefined && t.type !== 'custom') || t.input_schema !== undefined, {
    message: 'a custom tool needs an input_schema',
    path: ['input_schema'],
  });
const ToolChoice = z
  .looseObject({ type: z.enum(['auto', 'any', 'tool', 'none']), name: z.string().optional(), disable_parallel_tool_use: z.boolean().optional() })
  .refine((c) => c.type !== 'tool' || (c.name !== undefined && c.name.length > 0), { message: 'tool_choice of type tool needs a name', path: ['name'] });
const Body = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(Message).min(1),
  system: Content.optional(),
  stream: z.boolean().optional(),
  tools: z.array(Tool).optional(),
  tool_choice: ToolChoice.optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.looseObject({}).optional(),
  thinking: z.looseObject({ type: z.string() }).optional(),
});

interface AnthropicUsage {
  input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  output_tokens?: number | null;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** Anthropic's `input_tokens` excludes the cache reads and writes; the gateway's prompt includes them. */
export function anthropicUsage(usage: AnthropicUsage | null | undefined): Usage | null {
  if (!usage || typeof usage.input_tokens !== 'number') return null;
  const cached = num(usage.cache_read_input_tokens);
  const written = num(usage.cache_creation_input_tokens);
  return {
    promptTokens: usage.input_tokens + cached + written,
    cachedTokens: cached,
    cacheWriteTokens: written,
    outputTokens: num(usage.output_tokens),
    reasoningTokens: 0,
  };
}


type StreamPayload = {
  type?: string;
  message?: { usage?: AnthropicUsage | null };
  usage?: AnthropicUsage | null;
  content_block?: { type?: string; name?: string; text?: string; thinking?: string };
  delta?: { type?: string; text?: string; partial_json?: string; thinking?: string };
};

/** Anthropic Messages, native. */
export const messages: ProtocolAdapter = {
  protocol: 'messages',
  shape: 'messages',
  // The neutral `vendor-version` first, so a real `anthropic-version` wins when both are sent.
  forwardedHeaders: [['vendor-version', 'anthropic-version'], 'anthropic-version', 'anthropic-beta'],

  inspect(body) {
    const parsed = Body.safeParse(body);
    if (!parsed.success) return { invalid: zodMessage(parsed.error) };
    const raw = body as Record<string, unknown>;
    return {
      model: parsed.data.model,
      stream: parsed.data.stream === true,
      maxTokens: parsed.data.max_tokens,
      choices: 1,
      // The client's own JSON, so the estimate is the upstream's prompt formula.
      promptDocument: { system: raw.system, messages: raw.messages },
      // Server tools (web_search_*, code_execution_*, ...) are passed through as is.
      builtinTools: [],
    };
  },

  upstream(body, _info, upstreamModel) {
    return { path: '/v1/messages', body: { ...(body as Record<string, unknown>), model: upstreamModel } };
  },

  // The version header is required upstream: a default here, replaced by the client's own
  // `anthropic-version` (forwarded headers are applied after these).
  authHeaders: (apiKey) => ({ 'x-api-key': apiKey, 'anthropic-version': DEFAULT_ANTHROPIC_VERSION }),
  usageOf: (response) => anthropicUsage((response as { usage?: AnthropicUsage } | null)?.usage),
  // Anthropic's `{type: error, error: {type, message}}` keeps the message where OpenAI does.
  errorMessage: openAiErrorMessage,

  observe(): StreamObserver {
    let fields: AnthropicUsage | null = null;
    let finalOutput = false;
    let chars = 0;
    let done = false;
    const merge = (usage: AnthropicUsage | null | undefined) => {
      if (!usage) return;
      const next: AnthropicUsage = { ...(fields ?? {}) };
      for (const key of ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'output_tokens'] as const) {
        const value = usage[key];
        if (typeof value === 'number') next[key] = value;
      }
      fields = next;
    };
    return {
      onEvent(event) {
        let payload: StreamPayload;
        try {
          payload = JSON.parse(event.data);
        } catch {
          return true;
        }
        switch (payload.type) {
          case 'message_start':
            merge(payload.message?.usage);
            break;
          case 'content_block_start': {
            const block = payload.content_block;
            chars += (block?.name?.length ?? 0) + (block?.text?.length ?? 0) + (block?.thinking?.length ?? 0);
            break;
          }
          case 'content_block_delta': {
            const delta = payload.delta;
            if (delta?.type === 'text_delta') chars += delta.text?.length ?? 0;
            else if (delta?.type === 'input_json_delta') chars += delta.partial_json?.length ?? 0;
            else if (delta?.type === 'thinking_delta') chars += delta.thinking?.length ?? 0;
            break;
          }
          case 'message_delta':
            merge(payload.usage);
            if (typeof payload.usage?.output_tokens === 'number') finalOutput = true;
            break;
          case 'message_stop':
            done = true;
            break;
        }
        return true;
      },
      usage() {
        const usage = anthropicUsage(fields);
        if (!usage) return null;
        // message_start's output_tokens is a placeholder (1): until message_delta counts the
        // output, bill at least what was delivered.
        return finalOutput ? usage : { ...usage, outputTokens: Math.max(usage.outputTokens, tokensFromChars(chars)) };
      },
      outputChars: () => chars,
      completed: () => done,
    };
  },
};
