/** Small helpers the four protocol translators share. Pure functions, no I/O. */
import type { BuiltinTool, CanonicalEvent, CanonicalRequest, FunctionTool, ImageSource, Message, Part, ReasoningEffort } from './canonical';
import { tryJson } from '../json';

export type Json = Record<string, unknown>;

export const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const asRecord = (v: unknown): Json => (isRecord(v) ? v : {});
export const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Keys of a wire object the decoder did not read: the fields the translation drops.
 * `null` values count as absent (SDKs send explicit nulls for unset options). */
export function unreadKeys(body: Json, read: readonly string[], prefix = ''): string[] {
  const known = new Set(read);
  return Object.keys(body)
    .filter((k) => !known.has(k) && body[k] !== null && body[k] !== undefined)
    .map((k) => `${prefix}${k}`);
}

/** `data:<media type>;base64,<data>` becomes an inline image; anything else is an address. */
export function imageFromUrl(url: string): ImageSource {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return m ? { kind: 'base64', mediaType: m[1]!, data: m[2]! } : { kind: 'url', url };
}

export const imageToUrl = (source: ImageSource): string =>
  source.kind === 'url' ? source.url : `data:${source.mediaType};base64,${source.data}`;

/** JSON text of tool arguments as an object, for vendors that send objects (Anthropic, Gemini).
 * Unparseable or non-object text (a cut stream) becomes `{}`: these wires cannot carry it. */
export function argumentsObject(text: string): Json {
  try {
    const value: unknown = JSON.parse(text === '' ? '{}' : text);
    return isRecord(value) ? value : {};
  } catch {
    return {};
  }
}

/** Appends a part to the last message when it has the same role, else starts a message: for
 * wires that list items one by one (responses input, chat tool messages). */
export function appendPart(messages: Message[], role: Message['role'], part: Part): void {
  const last = messages.at(-1);
  if (last && last.role === role) messages[messages.length - 1] = { role, parts: [...last.parts, part] };
  else messages.push({ role, parts: [part] });
}

/** The name of the tool a result answers, from the call with that id earlier in the conversation. */
export function toolNameFor(messages: readonly Message[], upTo: number, callId: string): string | undefined {
  for (let i = upTo; i >= 0; i--) {
    for (const part of messages[i]?.parts ?? []) if (part.type === 'tool_call' && part.id === callId) return part.name;
  }
  return undefined;
}

/** Text of a tool result given as a string or a list of text blocks. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((block) => str(asRecord(block).text) ?? '')
    .join('');
}

/** Decoded SSE `data` of one event, or undefined for `[DONE]` and non-JSON lines. */
export function eventData(data: string): Json | undefined {
  const value = tryJson(data);
  return isRecord(value) ? value : undefined;
}

/** Wire fields with undefined values removed (the wire omits unset fields). */
export function compact<T extends Json>(object: T): T {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as T;
}

/** Tracks which canonical tool calls of a stream are open, so every decoder closes each call
 * exactly once, even when the upstream's finish signal is the only hint that a call ended. */
export class OpenCalls {
  private readonly open = new Set<number>();
  private count = 0;

  /** A new call: its ordinal index. */
  start(): number {
    const index = this.count++;
    this.open.add(index);
    return index;
  }
  get started(): number {
    return this.count;
  }
  end(index: number): CanonicalEvent[] {
    return this.open.delete(index) ? [{ type: 'tool_call_end', index }] : [];
  }
  endAll(): CanonicalEvent[] {
    return [...this.open].flatMap((index) => this.end(index));
  }
}

/** A built-in tool entry of an OpenAI request (`{type: image_generation, size, …}`) as the canonical
 * tool, or undefined for a tool translation cannot carry. */
export function builtinToolOf(tool: Json): BuiltinTool | undefined {
  if (tool.type !== 'image_generation') return undefined;
  const { type: _type, ...options } = tool;
  return Object.keys(options).length > 0 ? { type: 'image_generation', options } : { type: 'image_generation' };
}

/** OpenAI `tools` (chat-completions and responses): function tools, read by `functionOf` from the
 * entry (chat nests them under `function`, responses does not), the built-in tools translation
 * carries, and every other tool type reported dropped. */
export function decodeOpenAiTools(wire: unknown, dropped: Set<string>, functionOf: (tool: Json) => Json): { tools: FunctionTool[]; builtinTools: BuiltinTool[] } {
  const tools: FunctionTool[] = [];
  const builtinTools: BuiltinTool[] = [];
  for (const tool of asArray(wire)) {
    const t = asRecord(tool);
    const builtin = builtinToolOf(t);
    if (builtin) builtinTools.push(builtin);
    if (t.type !== 'function') {
      if (!builtin) dropped.add(`tools.${String(t.type)}`);
      continue;
    }
    const fn = functionOf(t);
    // Strict schemas are OpenAI's; other vendors' tools take none (Codex sends `strict: false`, the default elsewhere).
    if (fn.strict === true) dropped.add('tools.strict');
    tools.push(compact({ name: str(fn.name) ?? '', description: str(fn.description), parameters: asRecord(fn.parameters) }));
  }
  return { tools, builtinTools };
}

/** What an encoder reports when an earlier turn's reasoning cannot go to its vendor (every vendor but
 * Anthropic, and Anthropic without its own signature: no vendor takes back another's reasoning). */
export const HISTORY_REASONING = 'history.reasoning';

/** Built-in tools an encoder cannot send, reported as dropped (the relay routes such requests
 * only to channels whose protocol sends them). */
export function dropBuiltinTools(request: CanonicalRequest, dropped: Set<string>): void {
  for (const tool of request.builtinTools ?? []) dropped.add(`tools.${tool.type}`);
}

/** Token budgets for an OpenAI-style effort, for vendors that think in budgets (Anthropic, Gemini). */
export const BUDGET_FOR_EFFORT = { minimal: 1024, low: 2048, medium: 8192, high: 16_384 } as const;

/** The reasoning efforts OpenAI's wires (chat-completions, responses) accept. */
export const OPENAI_EFFORTS = new Set(['minimal', 'low', 'medium', 'high']);

/** Anthropic / Gemini think in token budgets, OpenAI in efforts: the nearest effort. */
export function effortForBudget(budget: number): ReasoningEffort {
  return budget < 4096 ? 'low' : budget < 16_384 ? 'medium' : 'high';
}

/** A request's reasoning as an OpenAI effort: the effort it names, else its budget's nearest. */
export function effortOf(request: CanonicalRequest): ReasoningEffort | undefined {
  let effort = request.reasoning?.effort;
  if (!effort && request.reasoning?.budgetTokens !== undefined) effort = effortForBudget(request.reasoning.budgetTokens);
  return effort;
}

/** A request's reasoning as a token budget (Anthropic, Gemini): the budget it names, else its effort's. */
export function budgetOf(request: CanonicalRequest): number | undefined {
  return request.reasoning?.budgetTokens ?? (request.reasoning?.effort ? BUDGET_FOR_EFFORT[request.reasoning.effort] : undefined);
}
