/** OpenAI Responses: POST /v1/responses. */
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
import { stripMarkers } from '../scenarios';
import { PNG_BASE64 } from './images';
import { eventFrame, nowSeconds, pad, sendJson, sendStream, type Ctx } from '../http';
import { schemaTypeProblem } from '../schema-check';
import { promptTokens } from '../tokens';

export function responsesTurn(body: unknown): Turn {
  const b = asRecord(body);
  const items = typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : asArray(b.input).map(asRecord);
  const callNames = new Map<string, string>();
  for (const it of items) {
    if (it.type === 'function_call' && typeof it.call_id === 'string' && typeof it.name === 'string') callNames.set(it.call_id, it.name);
  }
  const toolResults: ToolResult[] = [];
  for (let i = items.length - 1; i >= 0 && items[i]!.type === 'function_call_output'; i--) {
    const it = items[i]!;
    const id = typeof it.call_id === 'string' ? it.call_id : '';
    toolResults.unshift({ name: callNames.get(id) ?? id, content: contentText(it.output) });
  }
  const isMessage = (it: Record<string, unknown>): boolean => it.type === undefined || it.type === 'message';
  const lastUser = [...items].reverse().find((it) => isMessage(it) && it.role === 'user');
  const systemText = [
    typeof b.instructions === 'string' ? b.instructions : '',
    ...items.filter((it) => isMessage(it) && (it.role === 'system' || it.role === 'developer')).map((it) => contentText(it.content)),
  ].join('\n');
  const tools = asArray(b.tools)
    .map(asRecord)
    .filter((t) => t.type === 'function' && typeof t.name === 'string')
    .map((t) => ({ name: t.name as string, parameters: t.parameters }));
  const reasoning = asRecord(b.reasoning);
  const requested = b.reasoning === undefined || b.reasoning === null ? undefined : effortFrom(reasoning.effort ?? 'medium');
  const format = asRecord(asRecord(b.text).format).type;
  const schema = format === 'json_schema' ? asRecord(asRecord(b.text).format).schema : undefined;
  return {
    userText: lastUser ? contentText(lastUser.content) : '',
    toolResults,
    systemText,
    tools,
    toolChoice: responsesToolChoice(b.tool_choice),
    parallelToolCalls: b.parallel_tool_calls !== false,
    maxTokens: typeof b.max_output_tokens === 'number' ? b.max_output_tokens : undefined,
    reasoning: reasoningFor(typeof b.model === 'string' ? b.model : undefined, requested),
    json: format === 'json_object' || format === 'json_schema',
    jsonSchema: schema ?? undefined,
  };
}

function responsesToolChoice(v: unknown): ToolChoice {
  if (v === 'none') return { kind: 'none' };
  if (v === 'required') return { kind: 'required' };
  const r = asRecord(v);
  if (r.type === 'function' && typeof r.name === 'string') return { kind: 'named', name: r.name };
  return { kind: 'auto' };
}

export function responsesMarkerText(body: unknown): string {
  const t = responsesTurn(body);
  return [t.userText, ...t.toolResults.map((r) => r.content)].join('\n');
}

/**
 * The built-in image tool: one image per word "draw" in the latest user text, when the request offers
 * `{type: image_generation}` and does not end with tool results. Each is an `image_generation_call`
 * output item whose `result` is a base64 PNG (a 1×1 image whatever the `size`), placed before the
 * message; `usage` counts the text model's tokens only, as OpenAI's does (the images are counted by
 * their output items).
 */
function imageItems(b: Record<string, unknown>, turn: Turn, s: string): Record<string, unknown>[] {
  const tool = asArray(b.tools).map(asRecord).find((t) => t.type === 'image_generation');
  if (!tool || turn.toolResults.length > 0) return [];
  const prompt = stripMarkers(turn.userText);
  const count = prompt.match(/\bdraw\b/gi)?.length ?? 0;
  return Array.from({ length: count }, (_, i) => ({
    id: `ig_sim${s}_${i}`,
    type: 'image_generation_call',
    status: 'completed',
    background: typeof tool.background === 'string' ? tool.background : 'opaque',
    output_format: 'png',
    quality: typeof tool.quality === 'string' ? tool.quality : 'medium',
    size: typeof tool.size === 'string' ? tool.size : '1024x1024',
    revised_prompt: prompt,
    result: PNG_BASE64,
  }));
}

function usageOf(reply: Reply, prompt: number): Record<string, unknown> {
  return {
    input_tokens: prompt,
    input_tokens_details: { cached_tokens: cachedTokens(reply, prompt) },
    output_tokens: reply.outputTokens,
    output_tokens_details: { reasoning_tokens: reply.reasoningTokens },
    total_tokens: prompt + reply.outputTokens,
  };
}

export async function handleResponses(ctx: Ctx): Promise<void> {
  const b = asRecord(ctx.body);
  if (typeof b.model !== 'string') return sendError(ctx, "Missing required parameter: 'model'.");
  if (typeof b.input !== 'string' && !Array.isArray(b.input)) return sendError(ctx, "Missing required parameter: 'input'.");
  const invalid = invalidSchema(b);
  if (invalid) return sendError(ctx, invalid);
  const turn = responsesTurn(ctx.body);
  const reply = decideReply(turn, ctx.scenario);
  const prompt = promptTokens('responses', ctx.body);
  const s = pad(ctx.seq);
  const id = `resp_sim${s}`;
  const createdAt = nowSeconds();
  const incomplete = reply.truncated;
  const status = incomplete ? 'incomplete' : 'completed';

  const reasoningItem = reply.reasoningTokens > 0 ? { id: `rs_sim${s}`, type: 'reasoning', summary: [] } : undefined;
  const textPart = (text: string): Record<string, unknown> => ({ type: 'output_text', annotations: [], logprobs: [], text });
  const messageItem =
    reply.toolCalls.length === 0
      ? { id: `msg_sim${s}`, type: 'message', status, content: [textPart(reply.text)], role: 'assistant' }
      : undefined;
  const callItems = reply.toolCalls.map((c, i) => ({
    id: `fc_sim${s}_${i}`,
    type: 'function_call',
    status: 'completed',
    arguments: c.arguments,
    call_id: `call_sim${s}_${i}`,
    name: c.name,
  }));
  const images = imageItems(b, turn, s);
  const output: Record<string, unknown>[] = [...(reasoningItem ? [reasoningItem] : []), ...images, ...(messageItem ? [messageItem] : []), ...callItems];

  const responseObject = (st: string, out: unknown[], usage: unknown): Record<string, unknown> => ({
    id,
    object: 'response',
    created_at: createdAt,
    status: st,
    background: false,
    error: null,
    incomplete_details: st === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    model: b.model,
    output: out,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: turn.reasoning ?? null, summary: null },
    store: b.store ?? true,
    temperature: b.temperature ?? 1,
    text: b.text ?? { format: { type: 'text' } },
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    top_p: b.top_p ?? 1,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: b.metadata ?? {},
  });
  const finalUsage = ctx.scenario.noUsage ? null : usageOf(reply, prompt);

  if (b.stream !== true) {
    return sendJson(ctx, 200, responseObject(status, output, finalUsage));
  }

  const frames: string[] = [];
  const emit = (type: string, payload: Record<string, unknown>): void => {
    frames.push(eventFrame(type, { type, ...payload, sequence_number: frames.length }));
  };
  emit('response.created', { response: responseObject('in_progress', [], null) });
  emit('response.in_progress', { response: responseObject('in_progress', [], null) });
  let outputIndex = 0;
  if (reasoningItem) {
    emit('response.output_item.added', { output_index: outputIndex, item: reasoningItem });
    emit('response.output_item.done', { output_index: outputIndex, item: reasoningItem });
    outputIndex++;
  }
  for (const image of images) {
    const ref = { output_index: outputIndex, item_id: image.id };
    const { result: _result, ...pending } = image;
    emit('response.output_item.added', { output_index: outputIndex, item: { ...pending, status: 'in_progress' } });
    emit('response.image_generation_call.in_progress', ref);
    emit('response.image_generation_call.generating', ref);
    emit('response.image_generation_call.completed', ref);
    emit('response.output_item.done', { output_index: outputIndex, item: image });
    outputIndex++;
  }
  if (messageItem) {
    const itemId = messageItem.id;
    emit('response.output_item.added', {
      output_index: outputIndex,
      item: { id: itemId, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    emit('response.content_part.added', { item_id: itemId, output_index: outputIndex, content_index: 0, part: textPart('') });
    for (const delta of textPieces(reply.text)) {
      emit('response.output_text.delta', { item_id: itemId, output_index: outputIndex, content_index: 0, delta, logprobs: [] });
    }
    emit('response.output_text.done', { item_id: itemId, output_index: outputIndex, content_index: 0, text: reply.text, logprobs: [] });
    emit('response.content_part.done', { item_id: itemId, output_index: outputIndex, content_index: 0, part: textPart(reply.text) });
    emit('response.output_item.done', { output_index: outputIndex, item: messageItem });
    outputIndex++;
  }
  for (const item of callItems) {
    emit('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
    for (const delta of argumentPieces(item.arguments)) {
      emit('response.function_call_arguments.delta', { item_id: item.id, output_index: outputIndex, delta });
    }
    emit('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, name: item.name, arguments: item.arguments });
    emit('response.output_item.done', { output_index: outputIndex, item });
    outputIndex++;
  }
  emit(incomplete ? 'response.incomplete' : 'response.completed', { response: responseObject(status, output, finalUsage) });

  await sendStream(ctx, {
    contentType: 'text/event-stream; charset=utf-8',
    frames,
    errorFrame: (index) =>
      eventFrame('error', {
        type: 'error',
        code: 'server_error',
        message: STREAM_ERRORS.openai.message,
        param: null,
        sequence_number: index,
      }),
  });
}

/** OpenAI's refusal of a function or `text.format` schema with a type that is no JSON Schema type. */
function invalidSchema(b: Record<string, unknown>): string | undefined {
  for (const tool of asArray(b.tools).map(asRecord)) {
    const problem = tool.type === 'function' ? schemaTypeProblem(tool.parameters) : null;
    if (problem) return `Invalid schema for function '${String(tool.name)}': ${problem}.`;
  }
  const format = asRecord(asRecord(b.text).format);
  const problem = format.type === 'json_schema' ? schemaTypeProblem(format.schema) : null;
  return problem ? `Invalid schema for response_format '${String(format.name)}': ${problem}.` : undefined;
}

function sendError(ctx: Ctx, message: string): void {
  const e = vendorError('responses', 400, message);
  sendJson(ctx, e.status, e.body, e.headers);
}
