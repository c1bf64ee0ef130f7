import { z } from 'zod';
import type { ChatRequestInfo, ProtocolAdapter, StreamObserver, Usage } from '../contract';
import { isInvalidUsage, readCounts, summed, validUsage, type UsageReport } from '../usage';
import { zodMessage } from '../../config/zod-message';
import { isObject, textLength } from './chat-completions';

/** What the Gemini API accepts for `candidateCount`. */
export const MAX_CANDIDATES = 8;

const Part = z.looseObject({});
const Content = z.looseObject({
  role: z.string().min(1).optional(),
  parts: z.array(Part).min(1),
});
const Tool = z.looseObject({});
const Body = z.looseObject({
  contents: z.array(Content).min(1),
  systemInstruction: z.union([z.string(), z.looseObject({ role: z.string().optional(), parts: z.array(Part).optional() })]).optional(),
  generationConfig: z
    .looseObject({
      maxOutputTokens: z.number().int().positive().optional(),
      temperature: z.number().min(0).max(2).optional(),
      topP: z.number().min(0).max(1).optional(),
      topK: z.number().int().nonnegative().optional(),
      candidateCount: z.number().int().min(1).max(MAX_CANDIDATES).optional(),
      stopSequences: z.array(z.string()).optional(),
      responseMimeType: z.string().optional(),
      thinkingConfig: z.looseObject({}).optional(),
    })
    .optional(),
  tools: z.array(Tool).optional(),
  toolConfig: z.looseObject({ functionCallingConfig: z.looseObject({ mode: z.string().optional() }).optional() }).optional(),
  safetySettings: z.array(z.looseObject({})).optional(),
  cachedContent: z.string().optional(),
});
type Body = z.infer<typeof Body>;

/** Gemini's built-in tools, as the gateway's channel tool names (the keys of a Tool object). */
const BUILTIN_TOOLS: Record<string, string> = {
  googleSearch: 'web_search',
  google_search: 'web_search',
  googleSearchRetrieval: 'web_search',
  google_search_retrieval: 'web_search',
};

const GEMINI_COUNTS = ['promptTokenCount', 'cachedContentTokenCount', 'candidatesTokenCount', 'thoughtsTokenCount', 'toolUsePromptTokenCount'] as const;

/** Gemini's usageMetadata as billed: `promptTokenCount` already includes the cached
 * tokens; thoughts are output, billed at the output price. Tool-use prompt tokens
 * (e.g. search results fed back to the model) are billed as input. */
export function readGeminiUsage(raw: unknown): UsageReport {
  const c = readCounts(raw, 'promptTokenCount', GEMINI_COUNTS);
  if (c === null || isInvalidUsage(c)) return c;
  return summed({
    promptTokens: c.promptTokenCount + c.toolUsePromptTokenCount,
    cachedTokens: c.cachedContentTokenCount,
    cacheWriteTokens: 0,
    outputTokens: c.candidatesTokenCount + c.thoughtsTokenCount,
    reasoningTokens: c.thoughtsTokenCount,
  });
}

/** Valid usage or null (what the translators show a client). */
export const geminiUsage = (raw: unknown): Usage | null => validUsage(readGeminiUsage(raw));

interface Chunk {
  error?: unknown;
  usageMetadata?: unknown;
  candidates?: Array<{
    finishReason?: string;
    index?: unknown;
    content?: { parts?: Array<{ text?: unknown; functionCall?: { name?: unknown; args?: unknown } }> };
  }>;
}

/** Google answers an error as `{error: {code, message, status}}` (sometimes wrapped in a one-element array). */
function googleErrorMessage(body: unknown): string | null {
  const object = Array.isArray(body) ? body[0] : body;
  const message = (object as { error?: { message?: unknown } } | null)?.error?.message;
  return typeof message === 'string' ? message : null;
}

const stripModelsPrefix = (model: string) => model.replace(/^models\//, '');

/** Google Gemini generateContent / streamGenerateContent, native. */
export const generateContent: ProtocolAdapter = {
  requestSchema: Body,
  protocol: 'generate-content',
  shape: 'generate',
  forwardedHeaders: [],

  inspect(body, params) {
    const model = stripModelsPrefix(params.model ?? '');
    if (!model) return { invalid: 'the model is missing from the path: use /v1beta/models/{model}:generateContent' };
    const parsed = Body.safeParse(body);
    if (!parsed.success) return { invalid: zodMessage(parsed.error) };
    const b = parsed.data;
    const builtinTools = [
      ...new Set((b.tools ?? []).flatMap((tool) => Object.keys(tool).flatMap((key) => (BUILTIN_TOOLS[key] ? [BUILTIN_TOOLS[key]] : [])))),
    ];
    return {
      model,
      stream: params.stream === true,
      maxTokens: b.generationConfig?.maxOutputTokens ?? null,
      choices: b.generationConfig?.candidateCount ?? 1,
      // The same document the upstream counts, as the client wrote it: {systemInstruction,
      // contents} (an absent systemInstruction is dropped by JSON.stringify).
      promptDocument: { systemInstruction: (body as Body).systemInstruction, contents: (body as Body).contents },
      builtinTools,
    };
  },

  upstream(body, info: ChatRequestInfo, upstreamModel) {
    // The model is in the path, never the body; a stream is always asked for as SSE
    // (the client's JSON-array framing is the relay's business).
    const { model: _model, ...rest } = body as Body & { model?: unknown };
    const model = encodeURIComponent(stripModelsPrefix(upstreamModel));
    return {
      path: info.stream ? `/v1beta/models/${model}:streamGenerateContent?alt=sse` : `/v1beta/models/${model}:generateContent`,
      body: rest,
    };
  },

  authHeaders: (apiKey) => ({ 'x-goog-api-key': apiKey }),
  usageOf: (response) => readGeminiUsage(isObject(response) ? response.usageMetadata : undefined),
  errorMessage: googleErrorMessage,
  clientFraming: (query) => (query.alt === 'sse' ? 'sse' : 'json-array'),

  observe(): StreamObserver {
    let usage: UsageReport = null;
    let chars = 0;
    let finished = false;
    let failed = false;
    const indexes = new Set<number>();
    return {
      onEvent(event) {
        let chunk: Chunk;
        try {
          chunk = JSON.parse(event.data);
        } catch {
          return true;
        }
        if (!chunk || typeof chunk !== 'object') return true;
        if (chunk.error) failed = true;
        for (const candidate of Array.isArray(chunk.candidates) ? chunk.candidates : []) {
          if (!isObject(candidate)) continue;
          if (typeof candidate.index === 'number' && Number.isSafeInteger(candidate.index) && indexes.size < 128) indexes.add(candidate.index);
          const parts = isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts : [];
          for (const part of parts) {
            if (!isObject(part)) continue;
            chars += textLength(part.text);
            if (isObject(part.functionCall)) {
              chars += textLength(part.functionCall.name);
              chars += JSON.stringify(part.functionCall.args ?? {}).length;
            }
          }
          if (candidate.finishReason) finished = true;
        }
        // Every chunk may carry usageMetadata; the last one is the total.
        if (chunk.usageMetadata !== undefined && chunk.usageMetadata !== null) usage = readGeminiUsage(chunk.usageMetadata) ?? usage;
        return true;
      },
      // Google ends a failing SSE stream with a bare JSON error object outside the framing.
      onStray(text) {
        try {
          const object = JSON.parse(text) as Chunk | null;
          if (!object || typeof object !== 'object' || !object.error) return false;
        } catch {
          return false;
        }
        failed = true;
        return true;
      },
      usage: () => usage,
      outputChars: () => chars,
      completed: () => finished && !failed,
      lengthStop: () => [
        {
          event: undefined,
          data: JSON.stringify({
            candidates: [...(indexes.size > 0 ? indexes : [0])].map((index) => ({ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'MAX_TOKENS', index })),
          }),
        },
      ],
    };
  },
};
