import type { Scenario, ScenarioSet } from './types';

/** `[[sim:<scenario>]]`; several names may be separated by commas inside one marker. */
export const MARKER_RE = /\[\[sim:([^\]]*)\]\]/g;

export class ScenarioError extends Error {}

const FLAGS = new Set(['ok', 'reset_connection', 'garbage_body', 'no_usage', 'hang', 'task_failed', 'task_expired', 'task_cancelled', 'task_progress']);
const WITH_NUMBER = new Set([
  'slow_first_byte',
  'slow_stream',
  'cut_stream_after',
  'error_frame_after',
  'reply_tokens',
  'task_polls',
  'task_duration_ms',
  'images_partial',
]);

/** Numeric scenarios whose argument 0 makes no sense. */
const AT_LEAST_ONE = new Set(['task_polls', 'task_duration_ms']);

/** Throws ScenarioError when `name` is not a scenario. */
export function validateScenario(name: string): void {
  const n = name.trim();
  if (FLAGS.has(n)) return;
  const http = /^http_(\d{3})$/.exec(n);
  if (http) {
    const status = Number(http[1]);
    if (status < 400 || status > 599) throw new ScenarioError(`scenario ${n}: status must be 4xx or 5xx`);
    return;
  }
  const m = /^([a-z_]+):(\d+)$/.exec(n);
  // `tool_call` / `tool_call:<tool name>`: answer with a call of an offered tool.
  if (n === 'tool_call' || /^tool_call:[A-Za-z0-9_.-]{1,64}$/.test(n)) return;
  if (m && WITH_NUMBER.has(m[1]!)) {
    if (AT_LEAST_ONE.has(m[1]!) && Number(m[2]) < 1) throw new ScenarioError(`scenario ${n}: the argument must be >= 1`);
    return;
  }
  throw new ScenarioError(`unknown simulator scenario "${n}"`);
}

/** The scenario names written in `[[sim:...]]` markers of a text. */
export function markersIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(MARKER_RE)) {
    for (const part of m[1]!.split(',')) {
      const name = part.trim();
      if (name) out.push(name);
    }
  }
  return out;
}

/** Every string value anywhere in a JSON value, depth first: task submits may carry markers in any field. */
export function deepStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(deepStrings);
  if (value && typeof value === 'object') return Object.values(value).flatMap(deepStrings);
  return [];
}

/** The text without its markers (whitespace around a removed marker collapsed). */
export function stripMarkers(text: string): string {
  return text.replace(MARKER_RE, ' ').replace(/[ \t]{2,}/g, ' ').trim();
}

export function normalizeEntry(entry: Scenario | readonly Scenario[]): string[] {
  const names = typeof entry === 'string' ? [entry] : [...entry];
  for (const n of names) validateScenario(n);
  return names.map((n) => n.trim());
}

/** Merges scenario names into one set (later names win for the same knob). Throws on an unknown name. */
export function toScenarioSet(names: readonly string[]): ScenarioSet {
  const set: ScenarioSet = { names: [...names] };
  for (const raw of names) {
    validateScenario(raw);
    const name = raw.trim();
    const http = /^http_(\d{3})$/.exec(name);
    if (http) {
      set.status = Number(http[1]);
      continue;
    }
    if (name === 'tool_call' || name.startsWith('tool_call:')) {
      set.toolCall = name.slice('tool_call:'.length);
      continue;
    }
    const [key, arg] = name.split(':');
    const value = arg === undefined ? 0 : Number(arg);
    switch (key) {
      case 'ok':
        break;
      case 'reset_connection':
        set.reset = true;
        break;
      case 'hang':
        set.hang = true;
        break;
      case 'garbage_body':
        set.garbageBody = true;
        break;
      case 'no_usage':
        set.noUsage = true;
        break;
      case 'task_failed':
        set.taskEnd = 'failed';
        break;
      case 'task_expired':
        set.taskEnd = 'expired';
        break;
      case 'task_cancelled':
        set.taskEnd = 'cancelled';
        break;
      case 'task_progress':
        set.taskProgress = true;
        break;
      case 'task_duration_ms':
        set.taskDurationMs = value;
        break;
      case 'images_partial':
        set.imagesPartial = value;
        break;
      case 'slow_first_byte':
        set.firstByteMs = value;
        break;
      case 'slow_stream':
        set.streamDelayMs = value;
        break;
      case 'cut_stream_after':
        set.cutAfter = value;
        break;
      case 'error_frame_after':
        set.errorFrameAfter = value;
        break;
      case 'reply_tokens':
        set.replyTokens = value;
        break;
      case 'task_polls':
        set.taskPolls = value;
        break;
    }
  }
  return set;
}
