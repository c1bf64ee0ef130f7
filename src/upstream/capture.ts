import type { ModelConfig } from '../config/schema';
import type { Usage } from './contract';

/**
 * What one chat call may capture, whatever its upstream answers (issue 31, item 2). An upstream's
 * numbers are believed only within what the request could have caused:
 * - output: at most what was asked, `max_tokens` × choices; without a cap, the output the hold
 *   was computed on (min(model default, 32768) × choices);
 * - input: at most the request's size, one token per byte of its JSON body, plus PROMPT_OVERHEAD_TOKENS
 *   (the vendor's template and tool-use prompt) and MEDIA_PART_TOKENS for each image, audio or file
 *   part (whose tokens are not in its bytes), and never more than the
 *   model's context window. A request that names a provider's own tool (web search, code
 *   execution: results the upstream adds to the prompt) has only the context window as its bound;
 * - the capture: at most CAPTURE_FACTOR × the hold. The hold prices the prompt at bytes / 4 (spec,
 *   Billing flow 1) and the output at its bound, so a call within the two bounds above and without
 *   media or tool fees never reaches it.
 * Reported usage beyond a bound is clamped; a price beyond the capture bound is not charged but
 * recorded (`HoldSettled.uncharged`, the `gateway_uncharged_usd_total` counter).
 */

/** The capture of a chat call is at most this many times its hold. */
export const CAPTURE_FACTOR = 4n;
/** Input tokens a request may count beyond its bytes and media: the vendor's chat template and
 * the system prompt it adds for tool use (a few hundred tokens). */
export const PROMPT_OVERHEAD_TOKENS = 1_024;
/** Input tokens one image, audio or file part of a request may add beyond its bytes: above the
 * largest single image any vendor counts (about 1,600 to 2,500 tokens). */
export const MEDIA_PART_TOKENS = 8_192;

/** The most a call's usage is believed at. */
export interface UsageCeiling {
  readonly promptTokens: number;
  readonly outputTokens: number;
}

/** The usage ceiling of a request on one model (`shape`: its `requestShape`, taken once per call whatever
 * the number of models tried): `heldOutput` is the output tokens its hold was computed on. */
export function usageCeiling(model: ModelConfig, shape: RequestShape, maxTokens: number | null, choices: number, heldOutput: number): UsageCeiling {
  const window = model.context_window ?? Number.POSITIVE_INFINITY;
  const fromSize = shape.providerTools ? Number.POSITIVE_INFINITY : shape.bytes + PROMPT_OVERHEAD_TOKENS + shape.mediaParts * MEDIA_PART_TOKENS;
  const promptTokens = Math.min(window, fromSize);
  return {
    // Infinite only with a provider tool on a model whose window is unknown: the capture bound still holds.
    promptTokens: Number.isFinite(promptTokens) ? promptTokens : Number.MAX_SAFE_INTEGER,
    outputTokens: maxTokens === null ? heldOutput : maxTokens * choices,
  };
}

/** Usage clamped to the ceiling (the cached and cache-write parts within the prompt, the reasoning within the output). */
export function clampUsage(usage: Usage, ceiling: UsageCeiling): Usage {
  if (usage.promptTokens <= ceiling.promptTokens && usage.outputTokens <= ceiling.outputTokens) return usage;
  const promptTokens = Math.min(usage.promptTokens, ceiling.promptTokens);
  const outputTokens = Math.min(usage.outputTokens, ceiling.outputTokens);
  const cachedTokens = Math.min(usage.cachedTokens, promptTokens);
  const cacheWriteTokens = Math.min(usage.cacheWriteTokens, promptTokens - cachedTokens);
  return {
    ...usage,
    promptTokens,
    cachedTokens,
    cacheWriteTokens,
    ...(usage.cacheWrite1hTokens !== undefined ? { cacheWrite1hTokens: Math.min(usage.cacheWrite1hTokens, cacheWriteTokens) } : {}),
    outputTokens,
    reasoningTokens: Math.min(usage.reasoningTokens, outputTokens),
  };
}

/** A priced amount split into what is captured (at most CAPTURE_FACTOR × the hold) and what is not. */
export function boundedCapture(priced: bigint, hold: bigint): { captured: bigint; uncharged: bigint } {
  const bound = hold * CAPTURE_FACTOR;
  return priced > bound ? { captured: bound, uncharged: priced - bound } : { captured: priced, uncharged: 0n };
}

/** Part types that carry an image, audio or a file, in every chat protocol's request. */
const MEDIA_TYPES = new Set(['image_url', 'input_image', 'image', 'input_audio', 'audio', 'input_file', 'file', 'document']);
/** Gemini's media parts are keyed, not typed. */
const MEDIA_KEYS = ['inlineData', 'fileData', 'inline_data', 'file_data'];

export interface RequestShape {
  readonly bytes: number;
  readonly mediaParts: number;
  readonly providerTools: boolean;
}

/** The request's size in UTF-8 bytes of its JSON, its media parts, and whether it names a provider's own tool. */
export function requestShape(body: unknown): RequestShape {
  const bytes = Buffer.byteLength(JSON.stringify(body ?? null), 'utf8');
  let mediaParts = 0;
  const walk = (value: unknown) => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const record = value as Record<string, unknown>;
    if ((typeof record.type === 'string' && MEDIA_TYPES.has(record.type)) || MEDIA_KEYS.some((key) => record[key] !== undefined)) mediaParts += 1;
    for (const child of Object.values(record)) if (typeof child === 'object') walk(child);
  };
  const { tools, ...rest } = (body ?? {}) as { tools?: unknown };
  walk(rest);
  return { bytes, mediaParts, providerTools: Array.isArray(tools) && tools.some(isProviderTool) };
}

/** A tool the provider runs itself (its results join the prompt): anything but a function the client declares. */
function isProviderTool(tool: unknown): boolean {
  if (tool === null || typeof tool !== 'object') return false;
  const t = tool as Record<string, unknown>;
  if (t.type === 'function' || t.type === 'custom') return false;
  // Anthropic's client tools have no type; Gemini's are {functionDeclarations}.
  if (t.type === undefined && (t.input_schema !== undefined || t.functionDeclarations !== undefined)) return false;
  return true;
}

/** Keys whose string values are an answer's delivered text in every chat protocol's JSON. */
const TEXT_KEYS = new Set(['content', 'text', 'arguments', 'reasoning_content', 'thinking', 'refusal', 'partial_json']);

/**
 * The characters of text an answer delivered (its content, reasoning, tool-call arguments; `args`
 * objects as their JSON), not its length: what an answer without usable usage is billed on.
 */
export function deliveredChars(answer: unknown): number {
  let chars = 0;
  const walk = (value: unknown, key: string | null) => {
    if (typeof value === 'string') {
      if (key !== null && TEXT_KEYS.has(key)) chars += value.length;
      return;
    }
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (const item of value) walk(item, key);
      return;
    }
    for (const [k, v] of Object.entries(value)) {
      if (k === 'usage' || k === 'usageMetadata') continue;
      // Gemini function calls and Anthropic tool uses carry their arguments as objects.
      if ((k === 'args' || (k === 'input' && typeof v === 'object')) && v !== null) chars += JSON.stringify(v).length;
      else walk(v, k);
    }
  };
  walk(answer, null);
  return chars;
}

/** The fee tools a request's own `tools` name (Anthropic's server tools `web_search_*`, which its
 * inspection leaves out of `builtinTools`): their first call is held like the others'. */
export function feeToolsNamed(body: unknown): string[] {
  const tools = (body as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool) => {
    const type = tool !== null && typeof tool === 'object' ? (tool as { type?: unknown }).type : undefined;
    if (typeof type !== 'string') return [];
    if (type.startsWith('web_search')) return ['web_search'];
    return type === 'image_generation' ? ['image_generation'] : [];
  });
}

/** A stream's delivered text is about 4 characters a token; 4 times that is far above any
 * well-behaved answer within its cap (whitespace runs and long words included). */
export const OUTPUT_CHARS_PER_TOKEN = 16;

/** Output characters past which a stream is clearly beyond what the request asked for. */
export const outputCharsLimit = (ceiling: UsageCeiling): number => ceiling.outputTokens * OUTPUT_CHARS_PER_TOKEN;

/** The call-log note of a stream the gateway ended as a length stop. */
export const OUTPUT_CUT = {
  code: 'upstream_output_cut',
  message: "the upstream's output went past the request's max tokens × choices: the gateway ended the stream as a length stop",
};
