/** Google Gemini API: POST /v1beta/models/{model}:generateContent and :streamGenerateContent. */
import {
  asArray,
  asRecord,
  cachedTokens,
  contentText,
  decideReply,
  reasoningFor,
  textPieces,
  type ToolChoice,
  type ToolResult,
  type ToolSpec,
  type Turn,
} from '../conversation';
import { STREAM_ERRORS, vendorError } from '../errors';
import { pad, sendJson, sendStream, type Ctx } from '../http';
import { fromOpenApiSchema } from '../schema-sample';
import { promptTokens, type ReasoningEffort } from '../tokens';

const THOUGHT_TEXT = 'Considering the request step by step.';
const JSON_TYPE = 'application/json; charset=UTF-8';

function thinkingConfig(b: Record<string, unknown>): Record<string, unknown> {
  return asRecord(asRecord(b.generationConfig).thinkingConfig);
}

function thinkingRequested(b: Record<string, unknown>): ReasoningEffort | null | undefined {
  const tc = thinkingConfig(b);
  if (tc.thinkingBudget === 0) return null;
  if (typeof tc.thinkingLevel === 'string') {
    const level = tc.thinkingLevel.toLowerCase();
    return level === 'low' || level === 'minimal' ? 'low' : level === 'high' ? 'high' : 'medium';
  }
  if (typeof tc.thinkingBudget === 'number' || tc.includeThoughts === true) return 'medium';
  return undefined;
}

export function generateTurn(body: unknown, model: string | undefined): Turn {
  const b = asRecord(body);
  const contents = asArray(b.contents).map(asRecord);
  const last = contents.at(-1);
  const toolResults: ToolResult[] = [];
  for (const part of asArray(last?.parts).map(asRecord)) {
    const fr = asRecord(part.functionResponse);
    if (typeof fr.name === 'string') toolResults.push({ name: fr.name, content: JSON.stringify(fr.response ?? {}) });
  }
  const lastUser = [...contents].reverse().find((c) => c.role === 'user' || c.role === undefined);
  const tools: ToolSpec[] = [];
  for (const t of asArray(b.tools).map(asRecord)) {
    for (const fd of asArray(t.functionDeclarations).map(asRecord)) {
      if (typeof fd.name === 'string') tools.push({ name: fd.name, parameters: fd.parameters !== undefined ? fromOpenApiSchema(fd.parameters) : fd.parametersJsonSchema });
    }
  }
  const fcc = asRecord(asRecord(b.toolConfig).functionCallingConfig);
  const allowed = asArray(fcc.allowedFunctionNames).filter((n): n is string => typeof n === 'string');
  let toolChoice: ToolChoice = { kind: 'auto' };
  let offered = tools;
  if (fcc.mode === 'NONE') toolChoice = { kind: 'none' };
  else if (fcc.mode === 'ANY') {
    if (allowed.length > 0) offered = tools.filter((t) => allowed.includes(t.name));
    toolChoice = allowed.length === 1 ? { kind: 'named', name: allowed[0]! } : { kind: 'required' };
  }
  const gc = asRecord(b.generationConfig);
  return {
    userText: lastUser ? contentText(lastUser.parts) : '',
    toolResults,
    systemText: typeof b.systemInstruction === 'string' ? b.systemInstruction : contentText(asRecord(b.systemInstruction).parts),
    tools: offered,
    toolChoice,
    parallelToolCalls: true,
    maxTokens: typeof gc.maxOutputTokens === 'number' ? gc.maxOutputTokens : undefined,
    reasoning: reasoningFor(model, thinkingRequested(b)),
    json: gc.responseMimeType === 'application/json',
    jsonSchema: gc.responseJsonSchema ?? (gc.responseSchema !== undefined ? fromOpenApiSchema(gc.responseSchema) : undefined),
  };
}

export function generateMarkerText(body: unknown): string {
  const t = generateTurn(body, undefined);
  return [t.userText, ...t.toolResults.map((r) => r.content)].join('\n');
}

export async function handleGenerate(ctx: Ctx, stream: boolean): Promise<void> {
  const b = asRecord(ctx.body);
  const model = ctx.model ?? '';
  if (!Array.isArray(b.contents) || b.contents.length === 0) {
    const e = vendorError('generate-content', 400, '* GenerateContentRequest.contents: contents is not specified');
    return sendJson(ctx, e.status, e.body, e.headers, JSON_TYPE);
  }
  const count = asRecord(b.generationConfig).candidateCount ?? 1;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 8) {
    const e = vendorError('generate-content', 400, `* GenerateContentRequest.generation_config.candidate_count: must be from 1 to 8, got ${JSON.stringify(count)}`);
    return sendJson(ctx, e.status, e.body, e.headers, JSON_TYPE);
  }
  const turn = generateTurn(ctx.body, model);
  const reply = decideReply(turn, ctx.scenario);
  const prompt = promptTokens('generate-content', ctx.body);
  const cached = cachedTokens(reply, prompt);
  const r = reply.reasoningTokens;
  const promptDetails = [{ modality: 'TEXT', tokenCount: prompt }];
  // `candidateCount` answers, each the same reply: usage counts every one of them.
  const fullUsage = {
    promptTokenCount: prompt,
    candidatesTokenCount: reply.visibleTokens * count,
    totalTokenCount: prompt + (reply.visibleTokens + r) * count,
    promptTokensDetails: promptDetails,
    ...(cached > 0 ? { cachedContentTokenCount: cached, cacheTokensDetails: [{ modality: 'TEXT', tokenCount: cached }] } : {}),
    ...(r > 0 ? { thoughtsTokenCount: r * count } : {}),
  };
  const partialUsage = { promptTokenCount: prompt, totalTokenCount: prompt, promptTokensDetails: promptDetails };
  const withUsage = !ctx.scenario.noUsage;
  const finishReason = reply.truncated ? 'MAX_TOKENS' : 'STOP';
  const includeThoughts = thinkingConfig(b).includeThoughts === true && r > 0;
  const thoughtPart = { text: THOUGHT_TEXT, thought: true };
  const callParts = reply.toolCalls.map((c) => ({ functionCall: { name: c.name, args: JSON.parse(c.arguments) } }));
  const envelope = (parts: unknown[], final: boolean): Record<string, unknown> => ({
    candidates: Array.from({ length: count }, (_, index) => ({ content: { parts, role: 'model' }, ...(final ? { finishReason } : {}), index })),
    ...(withUsage ? { usageMetadata: final ? fullUsage : partialUsage } : {}),
    modelVersion: model,
    responseId: `sim${pad(ctx.seq)}`,
  });

  if (!stream) {
    const parts = [...(includeThoughts ? [thoughtPart] : []), ...(callParts.length > 0 ? callParts : [{ text: reply.text }])];
    return sendJson(ctx, 200, envelope(parts, true), {}, JSON_TYPE);
  }

  // one chunk per text piece (the function calls arrive whole, in one chunk); the last carries finishReason and full usage
  const chunks: unknown[][] = [];
  if (includeThoughts) chunks.push([thoughtPart]);
  if (callParts.length > 0) chunks.push(callParts);
  else {
    const pieces = textPieces(reply.text);
    for (const text of pieces.length > 0 ? pieces : ['']) chunks.push([{ text }]);
  }
  const bodies = chunks.map((parts, i) => envelope(parts, i === chunks.length - 1));

  if (ctx.url.searchParams.get('alt') === 'sse') {
    await sendStream(ctx, {
      contentType: 'text/event-stream',
      frames: bodies.map((body) => `data: ${JSON.stringify(body)}\r\n\r\n`),
      // Google aborts an SSE stream with a bare (pretty-printed) JSON error object outside the SSE
      // framing; @google/genai recognises it when it arrives as a read of its own, hence the gap.
      errorFrame: () => `${JSON.stringify(STREAM_ERRORS.google, null, 2)}\n`,
      errorGapMs: 50,
    });
    return;
  }
  // without alt=sse: one JSON array, written element by element
  const frames = bodies.map((body, i) => `${i === 0 ? '[' : '\n,\r\n'}${JSON.stringify(body, null, 2)}`);
  frames.push('\n]');
  await sendStream(ctx, {
    contentType: JSON_TYPE,
    frames,
    errorFrame: (i) => `${i === 0 ? '[' : '\n,\r\n'}${JSON.stringify(STREAM_ERRORS.google, null, 2)}\n]`,
  });
}
