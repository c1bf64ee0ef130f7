/**
 * The content-generation tasks API every asynchronous family speaks upstream (DESIGN.md, "Media, digital
 * humans and agents: the fixed parts"): `POST {base}/api/v3/contents/generations/tasks` with
 * `{model, …the request's own fields}` → `{id}`; `GET …/tasks/{id}` → the task; `DELETE …/tasks/{id}`
 * cancels it. One adapter for video, music, transcripts (and avatars): only `content` differs.
 */
import { channelDispatcher, shapedHeaders, withChannelQuery } from '../shaping';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { ChannelConfig } from '../../config/schema';
import { textWithin } from '../bounded-body';
import { tryJson } from '../json';
import { scrubberOf } from '../scrub';
import { brokenAnswer, CallSignal, classify, statusFailure, unreadable, upstreamAgent, upstreamTarget, type Failure } from '../upstream-call';

export const TASKS_PATH = '/api/v3/contents/generations/tasks';

/** A task view is a few URLs and numbers; anything much larger is not one. */
const TASK_ANSWER_BYTES = 4 * 1024 * 1024;

const finite = z.number().finite();

/** The upstream's task as the gateway reads it: unknown fields are dropped, odd numbers ignored. */
export const UpstreamTask = z.object({
  id: z.string().min(1),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'expired', 'cancelled']),
  progress: finite.optional().catch(undefined),
  content: z.record(z.string(), z.unknown()).optional().catch(undefined),
  usage: z
    .object({ completion_tokens: z.number().int().nonnegative(), total_tokens: z.number().int().nonnegative().optional() })
    .optional()
    .catch(undefined),
  duration: finite.nonnegative().optional().catch(undefined),
  framespersecond: finite.positive().optional().catch(undefined),
  error: z.object({ code: z.union([z.string(), z.number()]).transform(String), message: z.string() }).optional().catch(undefined),
});
export type UpstreamTask = z.output<typeof UpstreamTask>;

export type TaskAnswer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: Failure };

// Shaped by the channel's config (src/upstream/shaping.ts): query, auth header, extra headers, proxy.
const authHeaders = (channel: ChannelConfig): Record<string, string> => shapedHeaders(channel, { authorization: `Bearer ${channel.api_key}` });

async function call(
  dispatcher: Dispatcher,
  channel: ChannelConfig,
  method: 'POST' | 'GET' | 'DELETE',
  path: string,
  timeoutMs: number,
  body?: string,
  parent?: CallSignal,
): Promise<TaskAnswer<unknown>> {
  const target = upstreamTarget(channel.base_url, withChannelQuery(channel, path));
  const signal = new CallSignal(timeoutMs, parent);
  // Whether the answer's 2xx status has arrived: a failure after it is `brokenAnswer`'s (a submission the
  // upstream accepted is not sent to another channel), one before it the connection's.
  let accepted = false;
  try {
    const response = await (channelDispatcher(channel) ?? dispatcher).request({
      origin: target.origin,
      path: target.path,
      method,
      headers: { ...authHeaders(channel), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body } : {}),
      signal: signal.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    if (response.statusCode >= 400) return { ok: false, failure: await statusFailure(response.statusCode, response.headers, response.body, scrubberOf(channel)) };
    accepted = true;
    const text = await textWithin(response.body, TASK_ANSWER_BYTES);
    return { ok: true, value: text === '' ? {} : tryJson(text) };
  } catch (error) {
    return { ok: false, failure: accepted ? brokenAnswer(error, signal) : classify(error, signal) };
  } finally {
    signal.clear();
  }
}

/** Submits a task; the answer's `id` is the upstream's task id. */
export async function submitTask(
  channel: ChannelConfig,
  upstreamModel: string,
  fields: Readonly<Record<string, unknown>>,
  options: { timeoutMs: number; dispatcher?: Dispatcher; signal?: CallSignal },
): Promise<TaskAnswer<{ id: string }>> {
  const body = JSON.stringify({ ...fields, model: upstreamModel });
  const answer = await call(options.dispatcher ?? upstreamAgent, channel, 'POST', TASKS_PATH, options.timeoutMs, body, options.signal);
  if (!answer.ok) return answer;
  const id = (answer.value as { id?: unknown } | null)?.id;
  // A 2xx is an acceptance: without its id the task cannot be followed, and another channel would start a second one.
  if (typeof id !== 'string' || id === '') return { ok: false, failure: unreadable('a 2xx to the submission without a task id') };
  return { ok: true, value: { id } };
}

/** The upstream's view of a task; an answer that is not a task is a failure (unreachable: ask again later). */
export async function fetchTask(channel: ChannelConfig, upstreamTaskId: string, options: { timeoutMs: number; dispatcher?: Dispatcher }): Promise<TaskAnswer<UpstreamTask>> {
  const answer = await call(options.dispatcher ?? upstreamAgent, channel, 'GET', `${TASKS_PATH}/${encodeURIComponent(upstreamTaskId)}`, options.timeoutMs);
  if (!answer.ok) return answer;
  const parsed = UpstreamTask.safeParse(answer.value);
  if (!parsed.success) return { ok: false, failure: { kind: 'unreachable', message: 'the upstream answered a task poll with something that is not a task' } };
  // A failed task's message is the upstream's text like an error answer's: its credentials stay here.
  const task = parsed.data;
  return { ok: true, value: task.error ? { ...task, error: { ...task.error, message: scrubberOf(channel)(task.error.message) } } : task };
}

/** Asks the upstream to stop a task the gateway gave up on (expired): best effort, never throws. */
export async function cancelTask(channel: ChannelConfig, upstreamTaskId: string, options: { timeoutMs: number; dispatcher?: Dispatcher }): Promise<boolean> {
  const answer = await call(options.dispatcher ?? upstreamAgent, channel, 'DELETE', `${TASKS_PATH}/${encodeURIComponent(upstreamTaskId)}`, options.timeoutMs);
  return answer.ok;
}

/** The upstream's error message in its body (`{error: {message}}`), if any. */
export function tasksErrorMessage(body: unknown): string | null {
  const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
  return typeof message === 'string' ? message : null;
}
