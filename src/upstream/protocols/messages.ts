import { z } from 'zod';
import type { ProtocolAdapter, StreamObserver, Usage } from '../contract';
import { tokensFromChars } from '../pricing';
import { isInvalidUsage, readCounts, summed, validUsage, withToolCalls, type UsageReport } from '../usage';
import { zodMessage } from '../../config/zod-message';
import { isObject, openAiErrorMessage, textLength } from './chat-completions';

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

const ANTHROPIC_COUNTS = [
  'input_tokens',
  'cache_creation_input_tokens',
  'cache_read_input_tokens',
  'cache_creation.ephemeral_5m_input_tokens',
  'cache_creation.ephemeral_1h_input_tokens',
  'output_tokens',
  'server_tool_use.web_search_requests',
] as const;

/** Anthropic's `usage` as billed: its `input_tokens` excludes the cache reads and writes, the
 * gateway's prompt includes them; `cache_creation` splits the writes by lifetime (5 minutes, 1 hour);
 * `server_tool_use.web_search_requests` counts the web searches. Writes the split does not name are
 * 5-minute ones (older answers have no split); a split larger than `cache_creation_input_tokens` is
 * believed over it, so no reported write goes unbilled. */
export function readAnthropicUsage(raw: unknown): UsageReport {
  const c = readCounts(raw, 'input_tokens', ANTHROPIC_COUNTS);
  if (c === null || isInvalidUsage(c)) return c;
  const oneHour = c['cache_creation.ephemeral_1h_input_tokens'];
  const written = Math.max(c.cache_creation_input_tokens, c['cache_creation.ephemeral_5m_input_tokens'] + oneHour);
  const usage = summed({
    promptTokens: c.input_tokens + c.cache_read_input_tokens + written,
    cachedTokens: c.cache_read_input_tokens,
    cacheWriteTokens: written,
    ...(oneHour > 0 ? { cacheWrite1hTokens: oneHour } : {}),
    outputTokens: c.output_tokens,
    reasoningTokens: 0,
  });
  if (isInvalidUsage(usage)) return usage;
  return withToolCalls(usage, 'web_search', c['server_tool_use.web_search_requests'], 'server_tool_use.web_search_requests');
}

/** Valid usage or null (what the translators show a client). */
export const anthropicUsage = (raw: unknown): Usage | null => validUsage(readAnthropicUsage(raw));

/** Whether a request marks anything for a 1-hour cache entry: a `cache_control` with `ttl: '1h'` on the
 * top level, a tool, a system block or a content block (tool results' blocks included). */
export function asksLongCacheWrites(body: Record<string, unknown>): boolean {
  const long = (holder: unknown) => isObject(holder) && isObject(holder.cache_control) && holder.cache_control.ttl === '1h';
  // A tool result's blocks are one level down; no block nests deeper. Stops at the first, copies nothing:
  // it runs on every Messages request, whose history may hold thousands of blocks.
  const inBlocks = (content: unknown, nested = false): boolean =>
    Array.isArray(content) && content.some((b) => long(b) || (!nested && isObject(b) && inBlocks(b.content, true)));
  return (
    long(body) ||
    (Array.isArray(body.tools) && body.tools.some(long)) ||
    inBlocks(body.system) ||
    (Array.isArray(body.messages) && body.messages.some((m) => isObject(m) && inBlocks(m.content)))
  );
}

type StreamPayload = {
  type?: string;
  index?: unknown;
  message?: { usage?: unknown };
  usage?: unknown;
  content_block?: { type?: string; name?: unknown; text?: unknown; thinking?: unknown };
  delta?: { type?: string; text?: unknown; partial_json?: unknown; thinking?: unknown };
};

/** Anthropic Messages, native. */
export const messages: ProtocolAdapter = {
  requestSchema: Body,
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
      ...(asksLongCacheWrites(raw) ? { longCacheWrites: true } : {}),
    };
  },

  upstream(body, _info, upstreamModel) {
    return { path: '/v1/messages', body: { ...(body as Record<string, unknown>), model: upstreamModel } };
  },

  // The version header is required upstream: a default here, replaced by the client's own
  // `anthropic-version` (forwarded headers are applied after these).
  authHeaders: (apiKey) => ({ 'x-api-key': apiKey, 'anthropic-version': DEFAULT_ANTHROPIC_VERSION }),
  usageOf: (response) => readAnthropicUsage(isObject(response) ? response.usage : undefined),
  // Anthropic's `{type: error, error: {type, message}}` keeps the message where OpenAI does.
  errorMessage: openAiErrorMessage,

  observe(): StreamObserver {
    // The usage fields seen so far, as sent: message_start has the input side (and a placeholder
    // output), each message_delta the cumulative output and, lately, the rest again.
    let fields: unknown = null;
    let finalOutput = false;
    let chars = 0;
    let done = false;
    // Content blocks started and not yet stopped: a length stop closes them.
    const open = new Set<unknown>();
    const merge = (usage: unknown) => {
      if (usage === undefined || usage === null) return;
      // A block that is no object is kept as it is (the report then says the usage is invalid),
      // until an object replaces it: the last report wins, as in the other protocols.
      if (!isObject(usage) || !isObject(fields)) {
        fields = usage;
        return;
      }
      const next: Record<string, unknown> = { ...fields };
      for (const [key, value] of Object.entries(usage)) if (value !== undefined && value !== null) next[key] = value;
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
        if (!isObject(payload)) return true;
        switch (payload.type) {
          case 'message_start':
            merge(isObject(payload.message) ? payload.message.usage : undefined);
            break;
          case 'content_block_start': {
            if (open.size < 1024) open.add(payload.index);
            const block = isObject(payload.content_block) ? payload.content_block : {};
            chars += textLength(block.name) + textLength(block.text) + textLength(block.thinking);
            break;
          }
          case 'content_block_delta': {
            const delta = isObject(payload.delta) ? payload.delta : {};
            if (delta.type === 'text_delta') chars += textLength(delta.text);
            else if (delta.type === 'input_json_delta') chars += textLength(delta.partial_json);
            else if (delta.type === 'thinking_delta') chars += textLength(delta.thinking);
            break;
          }
          case 'content_block_stop':
            open.delete(payload.index);
            break;
          case 'message_delta':
            merge(payload.usage);
            if (isObject(payload.usage) && payload.usage.output_tokens !== undefined && payload.usage.output_tokens !== null) finalOutput = true;
            break;
          case 'message_stop':
            done = true;
            break;
        }
        return true;
      },
      usage() {
        const usage = readAnthropicUsage(fields);
        if (usage === null || isInvalidUsage(usage)) return usage;
        // message_start's output_tokens is a placeholder (1): until message_delta counts the
        // output, bill at least what was delivered.
        return finalOutput ? usage : { ...usage, outputTokens: Math.max(usage.outputTokens, tokensFromChars(chars)) };
      },
      outputChars: () => chars,
      completed: () => done,
      lengthStop: () => [
        ...[...open].map((index) => ({ event: 'content_block_stop', data: JSON.stringify({ type: 'content_block_stop', index }) })),
        // The output delivered, as an interrupted stream without usage is billed on (clamped to the cap).
        {
          event: 'message_delta',
          data: JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: tokensFromChars(chars) } }),
        },
        { event: 'message_stop', data: JSON.stringify({ type: 'message_stop' }) },
      ],
    };
  },
};
