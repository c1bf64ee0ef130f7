/** Anthropic Messages: POST /v1/messages. */
import {
  argumentPieces,
  asArray,
  asRecord,
  contentText,
  decideReply,
  reasoningFor,
  textPieces,
  type ToolChoice,
  type ToolResult,
  type Turn,
} from '../conversation';
import { STREAM_ERRORS, vendorError } from '../errors';
import { eventFrame, pad, sendJson, sendStream, type Ctx } from '../http';
import { schemaTypeProblem } from '../schema-check';
import { cachedTokensFor, promptTokens, type ReasoningEffort } from '../tokens';

const THINKING_TEXT = 'Considering the request step by step.';

function thinkingRequested(b: Record<string, unknown>): ReasoningEffort | undefined {
  const t = asRecord(b.thinking);
  if (t.type === 'enabled' || t.type === 'adaptive') return 'medium';
  return undefined;
}

export function messagesTurn(body: unknown): Turn {
  const b = asRecord(body);
  const messages = asArray(b.messages).map(asRecord);
  const toolNames = new Map<string, string>();
  for (const m of messages) {
    for (const block of asArray(m.content).map(asRecord)) {
      if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') toolNames.set(block.id, block.name);
    }
  }
  const last = messages.at(-1);
  const toolResults: ToolResult[] = [];
  if (last?.role === 'user') {
    for (const block of asArray(last.content).map(asRecord)) {
      if (block.type !== 'tool_result') continue;
      const id = typeof block.tool_use_id === 'string' ? block.tool_use_id : '';
      toolResults.push({ name: toolNames.get(id) ?? id, content: contentText(block.content) });
    }
  }
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const userText = lastUser
    ? typeof lastUser.content === 'string'
      ? lastUser.content
      : contentText(asArray(lastUser.content).filter((blk) => asRecord(blk).type === 'text'))
    : '';
  const tools = asArray(b.tools)
    .map(asRecord)
    .filter((t) => typeof t.name === 'string' && t.input_schema !== undefined)
    .map((t) => ({ name: t.name as string, parameters: t.input_schema }));
  const format = asRecord(b.output_format ?? asRecord(b.output_config).format);
  const structured = format.type === 'json_schema' ? (format.schema ?? {}) : undefined;
  return {
    userText,
    toolResults,
    systemText: contentText(b.system),
    tools,
    toolChoice: messagesToolChoice(b.tool_choice),
    parallelToolCalls: asRecord(b.tool_choice).disable_parallel_tool_use !== true,
    maxTokens: typeof b.max_tokens === 'number' ? b.max_tokens : undefined,
    reasoning: reasoningFor(typeof b.model === 'string' ? b.model : undefined, thinkingRequested(b)),
    // Structured outputs (`output_format` / `output_config.format` of type json_schema): the text is JSON.
    json: structured !== undefined,
    jsonSchema: structured,
  };
}

function messagesToolChoice(v: unknown): ToolChoice {
  const r = asRecord(v);
  if (r.type === 'none') return { kind: 'none' };
  if (r.type === 'any') return { kind: 'required' };
  if (r.type === 'tool' && typeof r.name === 'string') return { kind: 'named', name: r.name };
  return { kind: 'auto' };
}

export function messagesMarkerText(body: unknown): string {
  const t = messagesTurn(body);
  return [t.userText, ...t.toolResults.map((r) => r.content)].join('\n');
}

/** Caching is requested by the "[cache]" marker in the system prompt or a cache_control on a system block. */
function cacheRequested(b: Record<string, unknown>, systemText: string): boolean {
  return systemText.includes('[cache]') || asArray(b.system).some((blk) => asRecord(blk).cache_control !== undefined);
}

/** A system block whose cache_control asks `ttl: '1h'`: the write is reported as a 1-hour one. */
function oneHourCache(b: Record<string, unknown>): boolean {
  return asArray(b.system).some((blk) => asRecord(asRecord(blk).cache_control).ttl === '1h');
}

export async function handleMessages(ctx: Ctx): Promise<void> {
  const b = asRecord(ctx.body);
  if (ctx.req.headers['anthropic-version'] === undefined) return sendError(ctx, 'anthropic-version: header is required');
  if (typeof b.model !== 'string') return sendError(ctx, 'model: Field required');
  if (typeof b.max_tokens !== 'number') return sendError(ctx, 'max_tokens: Field required');
  if (!Array.isArray(b.messages)) return sendError(ctx, 'messages: Field required');
  const badTool = asArray(b.tools).findIndex((t) => schemaTypeProblem(asRecord(t).input_schema) !== null);
  if (badTool >= 0)
    return sendError(
      ctx,
      `tools.${badTool}.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12). Learn more about tool use at https://docs.claude.com/en/docs/tool-use.`,
    );
  const turn = messagesTurn(ctx.body);
  const reply = decideReply(turn, ctx.scenario);
  const prompt = promptTokens('messages', ctx.body);

  // prompt caching: half the prompt is cache_creation the first time a system prompt is seen, cache_read after
  let creation = 0;
  let read = 0;
  if (cacheRequested(b, turn.systemText)) {
    const key = JSON.stringify(b.system ?? null);
    const half = cachedTokensFor(prompt);
    if (ctx.sim.anthropicCacheSeen.has(key)) read = half;
    else {
      creation = half;
      ctx.sim.anthropicCacheSeen.add(key);
    }
  }
  const inputTokens = prompt - creation - read;
  const creation1h = oneHourCache(b) ? creation : 0;
  const usage = (outputTokens: number): Record<string, unknown> => ({
    input_tokens: inputTokens,
    cache_creation_input_tokens: creation,
    cache_read_input_tokens: read,
    cache_creation: { ephemeral_5m_input_tokens: creation - creation1h, ephemeral_1h_input_tokens: creation1h },
    output_tokens: outputTokens,
    service_tier: 'standard',
  });

  const s = pad(ctx.seq);
  const thinking = thinkingRequested(b) !== undefined;
  const blocks: Record<string, unknown>[] = [];
  if (thinking) blocks.push({ type: 'thinking', thinking: THINKING_TEXT, signature: `sim-signature-${s}` });
  if (reply.toolCalls.length === 0) blocks.push({ type: 'text', text: reply.text });
  reply.toolCalls.forEach((c, i) => blocks.push({ type: 'tool_use', id: `toolu_sim${s}_${i}`, name: c.name, input: JSON.parse(c.arguments) }));
  const stopReason = reply.toolCalls.length > 0 ? 'tool_use' : reply.truncated ? 'max_tokens' : 'end_turn';
  const base = { id: `msg_sim${s}`, type: 'message', role: 'assistant', model: b.model };
  const withUsage = !ctx.scenario.noUsage;

  if (b.stream !== true) {
    return sendJson(ctx, 200, {
      ...base,
      content: blocks,
      stop_reason: stopReason,
      stop_sequence: null,
      ...(withUsage ? { usage: usage(reply.outputTokens) } : {}),
    });
  }

  const frames: string[] = [];
  const emit = (type: string, payload: Record<string, unknown> = {}): void => {
    frames.push(eventFrame(type, { type, ...payload }));
  };
  emit('message_start', {
    message: { ...base, content: [], stop_reason: null, stop_sequence: null, ...(withUsage ? { usage: usage(1) } : {}) },
  });
  blocks.forEach((block, index) => {
    const start =
      block.type === 'thinking'
        ? { type: 'thinking', thinking: '', signature: '' }
        : block.type === 'text'
          ? { type: 'text', text: '' }
          : { type: 'tool_use', id: block.id, name: block.name, input: {} };
    emit('content_block_start', { index, content_block: start });
    if (index === 0) emit('ping'); // the API sends one ping right after the first content_block_start
    if (block.type === 'thinking') {
      emit('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking } });
      emit('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } });
    } else if (block.type === 'text') {
      for (const text of textPieces(reply.text)) emit('content_block_delta', { index, delta: { type: 'text_delta', text } });
    } else {
      emit('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const partial_json of argumentPieces(JSON.stringify(block.input))) {
        emit('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } });
      }
    }
    emit('content_block_stop', { index });
  });
  const deltaUsage = {
    input_tokens: inputTokens,
    cache_creation_input_tokens: creation,
    cache_read_input_tokens: read,
    output_tokens: reply.outputTokens,
  };
  emit('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, ...(withUsage ? { usage: deltaUsage } : {}) });
  emit('message_stop');

  await sendStream(ctx, {
    contentType: 'text/event-stream; charset=utf-8',
    frames,
    errorFrame: () => eventFrame('error', STREAM_ERRORS.anthropic),
  });
}

function sendError(ctx: Ctx, message: string): void {
  const e = vendorError('messages', 400, message, ctx.headers['request-id']);
  sendJson(ctx, e.status, e.body, e.headers);
}
