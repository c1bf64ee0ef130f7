/**
 * The simulator's deterministic "model": from a protocol-neutral view of the request (the Turn) it
 * decides the reply — echo text, tool calls, or a sentence about tool results — and its token counts.
 */
import { stripMarkers } from './scenarios';
import { sampleOf } from './schema-sample';
import {
  CACHE_MARKER,
  cachedTokensFor,
  fitToTokens,
  outputTokens,
  reasoningTokensFor,
  truncateToTokens,
  type ReasoningEffort,
} from './tokens';
import type { ScenarioSet } from './types';

export interface ToolSpec {
  readonly name: string;
  /** JSON schema (or Gemini's OpenAPI subset) of the arguments */
  readonly parameters: unknown;
}

export type ToolChoice =
  | { readonly kind: 'auto' }
  | { readonly kind: 'none' }
  | { readonly kind: 'required' }
  | { readonly kind: 'named'; readonly name: string };

export interface ToolResult {
  readonly name: string;
  readonly content: string;
}

/** A protocol-neutral view of a chat request. */
export interface Turn {
  /** text of the latest user message, markers included */
  readonly userText: string;
  /** non-empty when the conversation ends with tool results */
  readonly toolResults: readonly ToolResult[];
  /** all system / developer / instructions text (looked at for the cache marker) */
  readonly systemText: string;
  readonly tools: readonly ToolSpec[];
  readonly toolChoice: ToolChoice;
  readonly parallelToolCalls: boolean;
  readonly maxTokens: number | undefined;
  readonly reasoning: ReasoningEffort | undefined;
  readonly json: boolean;
  /** the schema the JSON answer must satisfy (json_schema formats, Gemini's responseSchema), if any */
  readonly jsonSchema?: unknown;
}

export interface ToolCall {
  readonly name: string;
  /** compact JSON text of the arguments object */
  readonly arguments: string;
}

export interface Reply {
  /** visible text ('' when the reply is tool calls) */
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  /** true when the max-tokens cap cut the text */
  readonly truncated: boolean;
  /** tokens of the visible text and tool calls */
  readonly visibleTokens: number;
  readonly reasoningTokens: number;
  /** visibleTokens + reasoningTokens */
  readonly outputTokens: number;
  /** true when the system text carries the cache marker */
  readonly cacheRequested: boolean;
}

/** Reasoning is on for model ids containing "reason" or "thinking" (effort medium) unless asked explicitly. */
export function reasoningFor(model: string | undefined, requested: ReasoningEffort | undefined | null): ReasoningEffort | undefined {
  if (requested === null) return undefined; // explicitly off
  if (requested) return requested;
  const m = (model ?? '').toLowerCase();
  return m.includes('reason') || m.includes('thinking') ? 'medium' : undefined;
}

/** 'minimal' → low, 'none' → off (null), low/medium/high as is, anything else → medium. */
export function effortFrom(value: unknown): ReasoningEffort | null | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'none') return null;
  if (value === 'minimal' || value === 'low') return 'low';
  if (value === 'high' || value === 'xhigh') return 'high';
  return 'medium';
}

export function decideReply(turn: Turn, scenario: ScenarioSet): Reply {
  const cacheRequested = turn.systemText.includes(CACHE_MARKER);
  const reasoningTokens = reasoningTokensFor(turn.reasoning);
  const calls = turn.toolResults.length === 0 ? requestedCalls(turn, scenario.toolCall) : [];
  let text = '';
  let truncated = false;
  if (calls.length === 0) {
    text = replyText(turn);
    if (scenario.replyTokens !== undefined) text = fitToTokens(text, scenario.replyTokens);
    if (turn.maxTokens !== undefined) {
      const cut = truncateToTokens(text, turn.maxTokens);
      truncated = cut !== text;
      text = cut;
    }
  }
  const visibleTokens = outputTokens(text, calls);
  return {
    text,
    toolCalls: calls,
    truncated,
    visibleTokens,
    reasoningTokens,
    outputTokens: visibleTokens + reasoningTokens,
    cacheRequested,
  };
}

export function cachedTokens(reply: Reply, prompt: number): number {
  return reply.cacheRequested ? cachedTokensFor(prompt) : 0;
}

function replyText(turn: Turn): string {
  if (turn.toolResults.length > 0) {
    return turn.toolResults.map((r) => `Tool ${r.name} returned: ${stripMarkers(r.content)}`).join('\n');
  }
  const said = stripMarkers(turn.userText);
  if (!turn.json) return `Echo: ${said}`;
  const shaped = turn.jsonSchema === undefined ? undefined : sampleOf(turn.jsonSchema, said);
  return JSON.stringify(shaped === undefined ? { echo: said } : shaped);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Tool-call rule (function tools only, never after tool results, never with tool choice "none"):
 * - a named tool choice calls that tool;
 * - otherwise every tool whose name appears (as a whole word) after the word "call" or "use" in the user
 *   text is called, in order of appearance ("call get_weather and get_time" → two parallel calls);
 * - with tool choice "required"/"any", or the scenario `tool_call`, and no name in the text, the first
 *   tool is called (`tool_call:<name>`: that tool, when offered);
 * - parallel tool calls disabled → only the first of them.
 * Arguments: a JSON object written right after the tool name in the text (`call f {"x":1}`), else values
 * generated from the parameter schema (valid against it; the same for the same text).
 */
function requestedCalls(turn: Turn, forced: string | undefined): ToolCall[] {
  if (turn.tools.length === 0 || turn.toolChoice.kind === 'none') return [];
  const text = stripMarkers(turn.userText);
  const picked: { name: string; argsAt: number | undefined }[] = [];
  const find = (name: string, from: number): RegExpExecArray | null => {
    const re = new RegExp(`(?<![\\w.-])${escapeRe(name)}(?![\\w-])`, 'g');
    re.lastIndex = from;
    return re.exec(text);
  };
  if (turn.toolChoice.kind === 'named') {
    const m = find(turn.toolChoice.name, 0);
    picked.push({ name: turn.toolChoice.name, argsAt: m ? m.index + m[0].length : undefined });
  } else {
    const call = /\b(?:call|use)\b/i.exec(text);
    if (call) {
      const found: { name: string; at: number; end: number }[] = [];
      for (const tool of turn.tools) {
        const m = find(tool.name, call.index + call[0].length);
        if (m) found.push({ name: tool.name, at: m.index, end: m.index + m[0].length });
      }
      found.sort((a, b) => a.at - b.at);
      for (const f of found) picked.push({ name: f.name, argsAt: f.end });
    }
    if (picked.length === 0 && forced !== undefined && forced !== '' && turn.tools.some((t) => t.name === forced)) picked.push({ name: forced, argsAt: undefined });
    if (picked.length === 0 && (turn.toolChoice.kind === 'required' || forced !== undefined)) picked.push({ name: turn.tools[0]!.name, argsAt: undefined });
  }
  const chosen = turn.parallelToolCalls ? picked : picked.slice(0, 1);
  return chosen.map(({ name, argsAt }) => {
    const explicit = argsAt === undefined ? undefined : jsonObjectAt(text, argsAt);
    const spec = turn.tools.find((t) => t.name === name);
    const args = explicit ?? sampleOf(spec?.parameters ?? { type: 'object' }, `${name}\n${text}`) ?? {};
    return { name, arguments: JSON.stringify(typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {}) };
  });
}

/** The JSON object starting at the first non-space character at or after `from`, if any. */
function jsonObjectAt(text: string, from: number): unknown {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  if (text[i] !== '{') return undefined;
  let depth = 0;
  let inString = false;
  for (let j = i; j < text.length; j++) {
    const ch = text[j]!;
    if (inString) {
      if (ch === '\\') j++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}') {
      depth--;
      if (depth === 0) {
        try {
          return JSON.parse(text.slice(i, j + 1));
        } catch {
          return undefined;
        }
      }
    }
  }
  return undefined;
}

/** Text pieces for streaming: split after each whitespace run ("Echo: hi there" → "Echo: ", "hi ", "there"). */
export function textPieces(text: string): string[] {
  return text === '' ? [] : text.split(/(?<=\s)(?=\S)/);
}

/** Argument pieces for streaming: 8 characters each. */
export function argumentPieces(args: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 8) out.push(args.slice(i, i + 8));
  return out;
}

/** Text of an OpenAI / Anthropic / Gemini content value: a string, or the text of its text parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => {
        if (typeof p === 'string') return p;
        if (p && typeof p === 'object') {
          const part = p as Record<string, unknown>;
          if (typeof part.text === 'string' && part.thought !== true) return part.text;
        }
        return '';
      })
      .filter((s) => s !== '')
      .join('\n');
  }
  if (content && typeof content === 'object' && typeof (content as { text?: unknown }).text === 'string') {
    return (content as { text: string }).text;
  }
  return '';
}

export function asRecord(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

export function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
