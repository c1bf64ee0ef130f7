import type { FeeTool, ModelConfig } from '../config/schema';
import type { ChatRequestInfo, Usage } from './contract';

/**
 * Upstream usage as the gateway may bill it. Every number an upstream reports is read here, at the
 * adapter boundary, and becomes either a `Usage` of non-negative safe integers within sane sizes, or
 * `{invalid: reason}`: a fraction, a negative, a string, `1e20` must never reach the ledger (the event
 * log could not read it back) nor the price arithmetic (BigInt of a fraction throws). A call whose
 * usage is invalid is billed like an interrupted stream without usage: estimated prompt, output from
 * the delivered characters (spec, Billing flow 4), and its call-log row says so.
 */

/** Usage the upstream reported but that cannot be billed as reported. */
export interface InvalidUsage {
  readonly invalid: string;
}

/** What an answer says about its usage: valid usage, invalid usage (with the reason), or nothing. */
export type UsageReport = Usage | InvalidUsage | null;

export function isInvalidUsage(report: object | null): report is InvalidUsage {
  return report !== null && 'invalid' in report;
}

/** Valid usage, or null for an invalid or absent report: what a translator may show a client. */
export const validUsage = (report: UsageReport): Usage | null => (report === null || isInvalidUsage(report) ? null : report);

/** No call reads or writes this many tokens (twice the largest context window offered anywhere): a
 * count above it is absurd whatever the request, and keeps every sum of counts a safe integer. */
export const MAX_REPORTED_TOKENS = 20_000_000;
/** Billed built-in tool calls (web searches) one call can plausibly make. */
export const MAX_REPORTED_TOOL_CALLS = 1_000;

/** One count as the vendor wrote it: `undefined` when absent (or null), else a whole number from 0
 * to the ceiling, else invalid. */
function count(value: unknown, field: string): number | undefined | InvalidUsage {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') return { invalid: `${field} is ${describe(value)}, not a number` };
  if (!Number.isInteger(value)) return { invalid: `${field} is ${describe(value)}, not a whole number` };
  if (value < 0) return { invalid: `${field} is negative (${value})` };
  // Also every integer beyond 2^53, which the event log could not read back.
  if (value > MAX_REPORTED_TOKENS) return { invalid: `${field} is ${value}, more than ${MAX_REPORTED_TOKENS}` };
  return value === 0 ? 0 : value; // -0 is a count of 0
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : String(value);
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads the named counts of a vendor's usage object (dotted paths reach into nested objects, e.g.
 * `prompt_tokens_details.cached_tokens`). Absent counts are 0. Null when the object is absent or
 * lacks its `required` count (the answer reported no usage); invalid when the object is not one, a
 * nested object on a path is not one, or any count is bad.
 */
export function readCounts<F extends string>(raw: unknown, required: F, fields: readonly F[]): Record<F, number> | InvalidUsage | null {
  if (raw === undefined || raw === null) return null;
  if (!isRecord(raw)) return { invalid: `usage is ${describe(raw)}, not an object` };
  const counts = {} as Record<F, number>;
  let present = false;
  for (const field of fields) {
    const path = field.split('.');
    let holder: unknown = raw;
    for (const step of path.slice(0, -1)) {
      holder = (holder as Record<string, unknown>)[step];
      if (holder === undefined || holder === null) break;
      if (!isRecord(holder)) return { invalid: `${path.slice(0, path.indexOf(step) + 1).join('.')} is ${describe(holder)}, not an object` };
    }
    const value = isRecord(holder) ? holder[path[path.length - 1]!] : undefined;
    const n = count(value, field);
    if (typeof n === 'object') return n;
    counts[field] = n ?? 0;
    if (field === required && n !== undefined) present = true;
  }
  return present ? counts : null;
}

/** Usage with the upstream's count of a built-in tool's calls (e.g. Anthropic's
 * `server_tool_use.web_search_requests`, the Responses `web_search_call` items). */
export function withToolCalls(usage: Usage, tool: FeeTool, calls: number, field: string): Usage | InvalidUsage {
  if (calls > MAX_REPORTED_TOOL_CALLS) return { invalid: `${field} is ${calls}, more than ${MAX_REPORTED_TOOL_CALLS}` };
  return calls === 0 ? usage : { ...usage, toolCalls: { ...usage.toolCalls, [tool]: calls } };
}

/** The usage a vendor's counts add up to, checked once more as sums (a prompt made of three counts). */
export function summed(usage: Usage): Usage | InvalidUsage {
  for (const [name, value] of [
    ['prompt tokens', usage.promptTokens],
    ['output tokens', usage.outputTokens],
  ] as const)
    if (value > MAX_REPORTED_TOKENS) return { invalid: `${name} add up to ${value}, more than ${MAX_REPORTED_TOKENS}` };
  return usage;
}

/** Sizes beyond which a valid-looking report is still not believed, for one request. */
export interface UsageBounds {
  /** Output tokens the request allowed (its cap, else the model's default cap, times the choices); null: unknown. */
  readonly outputAllowed: number | null;
  /** The model's context window; null: unknown. */
  readonly contextWindow: number | null;
}

/** Output beyond the allowance is believed up to twice the allowance plus this much: vendors count
 * a little differently (thinking budgets, tool-call tokens), never by orders of magnitude. */
export const OUTPUT_SLACK_TOKENS = 32_768;

export function usageBounds(model: ModelConfig, info: ChatRequestInfo): UsageBounds {
  const cap = info.maxTokens ?? model.default_max_tokens ?? null;
  return { outputAllowed: cap === null ? null : cap * info.choices, contextWindow: model.context_window ?? null };
}

/** A report checked against what the request allowed: more output than twice the allowance (plus
 * slack), or a prompt over twice the context window, is not usage but an upstream's bug. */
export function checkUsage(report: UsageReport, bounds: UsageBounds): UsageReport {
  if (report === null || isInvalidUsage(report)) return report;
  if (bounds.outputAllowed !== null && report.outputTokens > 2 * bounds.outputAllowed + OUTPUT_SLACK_TOKENS)
    return { invalid: `output tokens ${report.outputTokens} are far beyond the ${bounds.outputAllowed} the request allowed` };
  if (bounds.contextWindow !== null && report.promptTokens > 2 * bounds.contextWindow)
    return { invalid: `prompt tokens ${report.promptTokens} are far beyond the model's context window of ${bounds.contextWindow}` };
  return report;
}

/** The call-log code of a call billed on the estimate because its upstream's usage was invalid. */
export const USAGE_INVALID = 'upstream_usage_invalid';

/** The row's error fields for a call whose usage was invalid: a success row gets the code; a row that
 * has an error already (an interrupted stream) keeps its code and gains the reason in its message. */
export function usageInvalidNote(reason: string, error?: { code: string; message: string }): { error_code: string; error_message: string } {
  const note = `upstream usage invalid (${reason}): billed on the estimate`;
  return error ? { error_code: error.code, error_message: `${error.message}; ${note}` } : { error_code: USAGE_INVALID, error_message: note };
}
