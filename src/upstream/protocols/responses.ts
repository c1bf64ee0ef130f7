import { z } from 'zod';
import type { FeeTool } from '../../config/schema';
import type { ProtocolAdapter, StreamObserver, Usage } from '../contract';
import { isInvalidUsage, readCounts, summed, validUsage, withToolCalls, type InvalidUsage, type UsageReport } from '../usage';
import { zodMessage } from '../../config/zod-message';
import { isObject, openAiErrorMessage } from './chat-completions';

/** Any input item: a message (`{role, content}`, `type` absent or `message`), or a typed item
 * such as `function_call`, `function_call_output`, `reasoning`. */
const InputItem = z
  .looseObject({
    type: z.string().optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']).optional(),
  })
  .refine((item) => (item.type !== undefined && item.type !== 'message') || item.role !== undefined, {
    message: 'a message item needs a role (user, assistant, system or developer)',
  });

const Tool = z
  .looseObject({ type: z.string().min(1), name: z.string().optional() })
  .refine((tool) => tool.type !== 'function' || (typeof tool.name === 'string' && tool.name.length > 0), {
    message: 'a function tool needs a name',
  });

const Body = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(InputItem).min(1)]),
  instructions: z.string().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  max_output_tokens: z.number().int().positive().nullable().optional(),
  reasoning: z
    .looseObject({ effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullable().optional() })
    .nullable()
    .optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  tools: z.array(Tool).optional(),
  tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.looseObject({ type: z.string() })]).optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
});
type Body = z.infer<typeof Body>;

const RESPONSES_COUNTS = ['input_tokens', 'output_tokens', 'input_tokens_details.cached_tokens', 'output_tokens_details.reasoning_tokens'] as const;

/** The Responses `usage` as billed; `input_tokens` includes the cached tokens. */
export function readResponsesUsage(raw: unknown): UsageReport {
  const c = readCounts(raw, 'input_tokens', RESPONSES_COUNTS);
  if (c === null || isInvalidUsage(c)) return c;
  return summed({
    promptTokens: c.input_tokens,
    cachedTokens: c['input_tokens_details.cached_tokens'],
    cacheWriteTokens: 0,
    outputTokens: c.output_tokens,
    reasoningTokens: c['output_tokens_details.reasoning_tokens'],
  });
}

/** Valid usage or null (what the translators show a client). */
export const responsesUsage = (raw: unknown): Usage | null => validUsage(readResponsesUsage(raw));

/** Output items that are a billed built-in tool call, by the gateway's tool name. */
const TOOL_CALL_ITEMS: ReadonlyMap<unknown, FeeTool> = new Map([
  ['web_search_call', 'web_search'],
  ['image_generation_call', 'image_generation'],
]);

/** The built-in tool an output item bills, if any: an image only when it was made (its `result`). */
function billedTool(item: unknown): FeeTool | undefined {
  if (!isObject(item)) return undefined;
  const tool = TOOL_CALL_ITEMS.get(item.type);
  if (tool === 'image_generation' && !(typeof item.result === 'string' && item.result.length > 0)) return undefined;
  return tool;
}

/** A response object's usage with its built-in tool calls: the `web_search_call` items of its output. */
function responseUsage(response: unknown, seen?: ReadonlyMap<FeeTool, ReadonlySet<string>>): UsageReport {
  if (!isObject(response)) return null;
  const usage = readResponsesUsage(response.usage);
  if (usage === null || isInvalidUsage(usage)) return usage;
  const counts = new Map<FeeTool, number>();
  for (const item of Array.isArray(response.output) ? response.output : []) {
    const tool = billedTool(item);
    if (tool) counts.set(tool, (counts.get(tool) ?? 0) + 1);
  }
  // A stream's final response may list its output items, or not: the items seen go by count too.
  for (const [tool, ids] of seen ?? []) counts.set(tool, Math.max(counts.get(tool) ?? 0, ids.size));
  let withCalls: Usage | InvalidUsage = usage;
  for (const [tool, calls] of counts) {
    if (isInvalidUsage(withCalls)) break;
    withCalls = withToolCalls(withCalls, tool, calls, `${tool}_call items`);
  }
  return withCalls;
}

/** Tools the client runs itself; every other type is a built-in the channel must support. */
const CLIENT_TOOLS = new Set(['function', 'custom']);

/** Events that end a response: usage is in their `response`. Only the first two are a proper end. */
const FINISHED = new Set(['response.completed', 'response.incomplete']);
const TERMINAL = new Set([...FINISHED, 'response.failed']);

/** Deltas whose `delta` text is delivered output (visible text, tool arguments, reasoning). */
const OUTPUT_DELTAS = new Set([
  'response.output_text.delta',
  'response.refusal.delta',
  'response.function_call_arguments.delta',
  'response.custom_tool_call_input.delta',
  'response.reasoning_text.delta',
  'response.reasoning_summary_text.delta',
]);

/** OpenAI Responses, native. */
export const responses: ProtocolAdapter = {
  requestSchema: Body,
  protocol: 'responses',
  shape: 'chat',
  // OpenAI's beta opt-in, as anthropic-beta is Anthropic's (Codex sends `responses=experimental`). The client's
  // own identity (originator, version, session_id) stays here: the gateway is the upstream's client.
  forwardedHeaders: ['openai-beta'],

  inspect(body) {
    const parsed = Body.safeParse(body);
    if (!parsed.success) return { invalid: zodMessage(parsed.error) };
    const b = parsed.data;
    // Unlike chat-completions, built-in tools (image_generation included) do not require a stream here;
    // the relay keeps only the channels that list them, else 400 tool_not_supported.
    const builtinTools = [...new Set((b.tools ?? []).map((t) => t.type).filter((t) => !CLIENT_TOOLS.has(t)))];
    const raw = body as Record<string, unknown>;
    return {
      model: b.model,
      stream: b.stream === true,
      maxTokens: b.max_output_tokens ?? null,
      choices: 1,
      // What the upstream counts as the prompt: an absent `instructions` is dropped by JSON.stringify.
      promptDocument: { instructions: raw.instructions, input: raw.input },
      builtinTools,
    };
  },

  upstream(body, _info, upstreamModel) {
    return { path: '/v1/responses', body: { ...(body as Body), model: upstreamModel } };
  },

  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  usageOf: (response) => responseUsage(response),
  errorMessage: openAiErrorMessage,

  observe(): StreamObserver {
    let usage: UsageReport = null;
    let chars = 0;
    let done = false;
    // What a length stop repeats of the response the events described.
    let head: Record<string, unknown> = { id: '', object: 'response', created_at: 0, model: '' };
    // Built-in tool calls by item id, as their items are done, for a final response that does not list its output.
    const toolCalls = new Map<FeeTool, Set<string>>();
    return {
      onEvent(event) {
        let data: unknown;
        try {
          data = JSON.parse(event.data);
        } catch {
          return true;
        }
        if (!isObject(data)) return true;
        const type = event.event ?? (typeof data.type === 'string' ? data.type : '');
        if (isObject(data.response)) head = { id: data.response.id, object: 'response', created_at: data.response.created_at, model: data.response.model };
        const item = isObject(data.item) ? data.item : null;
        if (OUTPUT_DELTAS.has(type) && typeof data.delta === 'string') chars += data.delta.length;
        else if (type === 'response.output_item.added' && item?.type === 'function_call' && typeof item.name === 'string') chars += item.name.length;
        else if (TERMINAL.has(type)) {
          usage = responseUsage(data.response, toolCalls) ?? usage;
          if (FINISHED.has(type)) done = true;
        }
        const tool = billedTool(item);
        if (item && tool && type === 'response.output_item.done') {
          const ids = toolCalls.get(tool) ?? toolCalls.set(tool, new Set()).get(tool)!;
          ids.add(typeof item.id === 'string' ? item.id : `#${String(data.output_index)}`);
        }
        return true;
      },
      usage: () => usage,
      outputChars: () => chars,
      completed: () => done,
      lengthStop: () => [
        {
          event: 'response.incomplete',
          data: JSON.stringify({
            type: 'response.incomplete',
            response: { ...head, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [], usage: null },
          }),
        },
      ],
      // Delivered so far: billed even when the stream ends without its usage (a cut after an image).
      toolCalls: () => (toolCalls.size === 0 ? undefined : Object.fromEntries([...toolCalls].map(([tool, ids]) => [tool, ids.size]))),
    };
  },
};
