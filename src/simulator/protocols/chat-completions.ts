/** OpenAI Chat Completions: POST /v1/chat/completions. */
import {
  argumentPieces,
  asArray,
  asRecord,
  cachedTokens,
  contentText,
  decideReply,
  effortFrom,
  reasoningFor,
  textPieces,
  type Reply,
  type ToolChoice,
  type ToolResult,
  type Turn,
} from '../conversation';
import { STREAM_ERRORS, vendorError } from '../errors';
import { dataFrame, nowSeconds, pad, sendJson, sendStream, type Ctx } from '../http';
import { schemaTypeProblem } from '../schema-check';
import { promptTokens } from '../tokens';

export function chatTurn(body: unknown): Turn {
  const b = asRecord(body);
  const messages = asArray(b.messages).map(asRecord);
  const toolNames = new Map<string, string>();
  for (const m of messages) {
    for (const call of asArray(m.tool_calls).map(asRecord)) {
      const fn = asRecord(call.function);
      if (typeof call.id === 'string' && typeof fn.name === 'string') toolNames.set(call.id, fn.name);
    }
  }
  const toolResults: ToolResult[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) {
    const m = messages[i]!;
    const id = typeof m.tool_call_id === 'string' ? m.tool_call_id : '';
    toolResults.unshift({ name: toolNames.get(id) ?? (typeof m.name === 'string' ? m.name : id), content: contentText(m.content) });
  }
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const systemText = messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => contentText(m.content))
    .join('\n');
  const tools = asArray(b.tools)
    .map(asRecord)
    .filter((t) => t.type === 'function')
    .map((t) => asRecord(t.function))
    .filter((f) => typeof f.name === 'string')
    .map((f) => ({ name: f.name as string, parameters: f.parameters }));
  const rf = asRecord(b.response_format).type;
  const schema = rf === 'json_schema' ? asRecord(asRecord(b.response_format).json_schema).schema : undefined;
  const maxTokens = typeof b.max_completion_tokens === 'number' ? b.max_completion_tokens : typeof b.max_tokens === 'number' ? b.max_tokens : undefined;
  return {
    userText: lastUser ? contentText(lastUser.content) : '',
    toolResults,
    systemText,
    tools,
    toolChoice: chatToolChoice(b.tool_choice),
    parallelToolCalls: b.parallel_tool_calls !== false,
    maxTokens,
    reasoning: reasoningFor(typeof b.model === 'string' ? b.model : undefined, effortFrom(b.reasoning_effort)),
    json: rf === 'json_object' || rf === 'json_schema',
    jsonSchema: schema ?? undefined,
  };
}

function chatToolChoice(v: unknown): ToolChoice {
  if (v === 'none') return { kind: 'none' };
  if (v === 'required') return { kind: 'required' };
  const name = asRecord(asRecord(v).function).name;
  if (typeof name === 'string') return { kind: 'named', name };
  return { kind: 'auto' };
}

/** Text searched for `[[sim:...]]` markers: the latest user message and trailing tool results. */
export function chatMarkerText(body: unknown): string {
  const t = chatTurn(body);
  return [t.userText, ...t.toolResults.map((r) => r.content)].join('\n');
}

/** `n` answers, each the same reply: usage counts every one of them. */
function usageOf(reply: Reply, prompt: number, n: number): Record<string, unknown> {
  return {
    prompt_tokens: prompt,
    completion_tokens: reply.outputTokens * n,
    total_tokens: prompt + reply.outputTokens * n,
    prompt_tokens_details: { cached_tokens: cachedTokens(reply, prompt), audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reply.reasoningTokens * n,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

export async function handleChat(ctx: Ctx): Promise<void> {
  const b = asRecord(ctx.body);
  if (typeof b.model !== 'string') {
    return sendError(ctx, "you must provide a model parameter");
  }
  if (!Array.isArray(b.messages) || b.messages.length === 0) {
    return sendError(ctx, "Missing required parameter: 'messages'.");
  }
  const invalid = invalidSchema(b);
  if (invalid) return sendError(ctx, invalid);
  const n = b.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 128) {
    return sendError(ctx, `Invalid 'n': expected an integer from 1 to 128, but got ${JSON.stringify(n)} instead.`);
  }
  const turn = chatTurn(ctx.body);
  const reply = decideReply(turn, ctx.scenario);
  const prompt = promptTokens('chat-completions', ctx.body);
  const id = `chatcmpl-sim${pad(ctx.seq)}`;
  const created = nowSeconds();
  const model = b.model;
  const calls = reply.toolCalls.map((c, i) => ({ id: `call_sim${pad(ctx.seq)}_${i}`, ...c }));
  const finish = calls.length > 0 ? 'tool_calls' : reply.truncated ? 'length' : 'stop';
  const withUsage = !ctx.scenario.noUsage;

  if (b.stream !== true) {
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: calls.length > 0 ? null : reply.text,
      refusal: null,
      annotations: [],
    };
    if (calls.length > 0) {
      message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    }
    return sendJson(ctx, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: Array.from({ length: n }, (_, index) => ({ index, message, logprobs: null, finish_reason: finish })),
      ...(withUsage ? { usage: usageOf(reply, prompt, n) } : {}),
      service_tier: 'default',
      system_fingerprint: 'fp_sim',
    });
  }

  const includeUsage = asRecord(b.stream_options).include_usage === true && withUsage;
  let choice = 0;
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): string =>
    dataFrame({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      service_tier: 'default',
      system_fingerprint: 'fp_sim',
      choices: [{ index: choice, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    });
  const frames: string[] = [];
  // With `n`, each answer in turn, its chunks marked with its index.
  for (; choice < n; choice++) {
    if (calls.length === 0) {
      frames.push(chunk({ role: 'assistant', content: '', refusal: null }));
      for (const piece of textPieces(reply.text)) frames.push(chunk({ content: piece }));
    } else {
      calls.forEach((c, index) => {
        const head = { index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } };
        frames.push(chunk(index === 0 ? { role: 'assistant', content: null, tool_calls: [head], refusal: null } : { tool_calls: [head] }));
        for (const piece of argumentPieces(c.arguments)) frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      });
    }
    frames.push(chunk({}, finish));
  }
  if (includeUsage) {
    frames.push(
      dataFrame({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        service_tier: 'default',
        system_fingerprint: 'fp_sim',
        choices: [],
        usage: usageOf(reply, prompt, n),
      }),
    );
  }
  frames.push('data: [DONE]\n\n');
  await sendStream(ctx, {
    contentType: 'text/event-stream; charset=utf-8',
    frames,
    errorFrame: () => dataFrame({ error: STREAM_ERRORS.openai }),
  });
}

/** OpenAI's refusal of a function or response-format schema with a type that is no JSON Schema type. */
function invalidSchema(b: Record<string, unknown>): string | undefined {
  for (const tool of asArray(b.tools).map(asRecord)) {
    const fn = asRecord(tool.function);
    const problem = tool.type === 'function' ? schemaTypeProblem(fn.parameters) : null;
    if (problem) return `Invalid schema for function '${String(fn.name)}': ${problem}.`;
  }
  const format = asRecord(b.response_format);
  const schema = asRecord(format.json_schema);
  const problem = format.type === 'json_schema' ? schemaTypeProblem(schema.schema) : null;
  return problem ? `Invalid schema for response_format '${String(schema.name)}': ${problem}.` : undefined;
}

function sendError(ctx: Ctx, message: string): void {
  const e = vendorError('chat-completions', 400, message);
  sendJson(ctx, e.status, e.body, e.headers);
}
