import { z } from 'zod';
import type { ProtocolAdapter, StreamObserver, Usage } from '../contract';
import { openAiErrorMessage, zodMessage } from './chat-completions';

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

interface ResponsesUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number } | null;
  output_tokens_details?: { reasoning_tokens?: number } | null;
}

export function responsesUsage(usage: ResponsesUsage | null | undefined): Usage | null {
  if (!usage || typeof usage.input_tokens !== 'number') return null;
  return {
    promptTokens: usage.input_tokens,
    cachedTokens: usage.input_tokens_details?.cached_tokens ?? 0,
    cacheWriteTokens: 0,
    outputTokens: usage.output_tokens ?? 0,
    reasoningTokens: usage.output_tokens_details?.reasoning_tokens ?? 0,
  };
}

/** An output item of the built-in image tool that carries its image: one image billed. */
const isImage = (item: unknown): boolean => {
  const i = item as { type?: unknown; result?: unknown } | null;
  return i?.type === 'image_generation_call' && typeof i.result === 'string' && i.result !== '';
};

/** `usage` with the images of `output` counted, or null when there is no usage. */
function withImages(usage: Usage | null, images: number): Usage | null {
  return usage && images > 0 ? { ...usage, toolCalls: { ...usage.toolCalls, image_generation: images } } : usage;
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
  protocol: 'responses',
  shape: 'chat',
  forwardedHeaders: [],

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
  usageOf(response) {
    const r = response as { usage?: ResponsesUsage; output?: unknown } | null;
    return withImages(responsesUsage(r?.usage), Array.isArray(r?.output) ? r.output.filter(isImage).length : 0);
  },
  errorMessage: openAiErrorMessage,

  observe(): StreamObserver {
    let usage: Usage | null = null;
    let chars = 0;
    let done = false;
    /** Images delivered: counted as their items finish, so a stream cut after one still bills it. */
    let images = 0;
    return {
      onEvent(event) {
        let data: { type?: string; delta?: unknown; item?: { type?: string; name?: unknown }; response?: { usage?: ResponsesUsage | null } };
        try {
          data = JSON.parse(event.data);
        } catch {
          return true;
        }
        const type = event.event ?? data.type ?? '';
        if (OUTPUT_DELTAS.has(type) && typeof data.delta === 'string') chars += data.delta.length;
        else if (type === 'response.output_item.added' && data.item?.type === 'function_call' && typeof data.item.name === 'string')
          chars += data.item.name.length;
        else if (type === 'response.output_item.done' && isImage(data.item)) images++;
        else if (TERMINAL.has(type)) {
          usage = responsesUsage(data.response?.usage) ?? usage;
          if (FINISHED.has(type)) done = true;
        }
        return true;
      },
      usage: () => withImages(usage, images),
      outputChars: () => chars,
      toolCalls: () => (images > 0 ? { image_generation: images } : undefined),
      completed: () => done,
    };
  },
};
