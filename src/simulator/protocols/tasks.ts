/**
 * The content-generation tasks API (ModelArk style), shared by every asynchronous family:
 *   POST   …/api/v3/contents/generations/tasks       → {id}
 *   GET    …/api/v3/contents/generations/tasks/{id}  → the task, in its family's shape
 *   DELETE …/api/v3/contents/generations/tasks/{id}  → cancels a task still in flight
 * One endpoint serves video, music (and its follow-ups), transcripts and avatars, so the family of a
 * submit is read off its body; the family modules compute the result at submit time and this module
 * runs the lifecycle every family shares (poll-count progression, progress, final state, cancel).
 */
import { asRecord } from '../conversation';
import { vendorError } from '../errors';
import { nowSeconds, pad, sendJson, type Ctx } from '../http';
import type { Protocol, ScenarioSet } from '../types';
import { avatarSubmission } from './avatars';
import { clipSubmission } from './clip';
import { digitalHumanSubmission } from './digital-humans';
import { musicAssetSubmission, musicSubmission } from './music';
import { transcriptSubmission } from './transcripts';
import { videoSubmission } from './videos';

export type TaskFamily = 'video' | 'clip' | 'digital-human' | 'music' | 'music-asset' | 'transcript' | 'avatar';
export type TaskStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'expired' | 'cancelled';
type FinalStatus = Exclude<TaskStatus, 'queued' | 'running'>;

/** Everything a succeeded view shows, fixed when the task is submitted. */
export interface TaskResult {
  readonly content: Record<string, unknown>;
  /** delivered length in seconds (video, music) */
  readonly duration?: number;
  readonly framespersecond?: number;
  readonly usage?: Record<string, unknown>;
  /** request fields every view repeats (video: ratio, resolution, …; music follow-ups: action) */
  readonly echoed?: Record<string, unknown>;
}

export interface Rejection {
  readonly status: number;
  readonly message: string;
}

/** What a family module sees of a submit. */
export interface SubmitContext {
  readonly id: string;
  readonly baseUrl: string;
  readonly scenario: ScenarioSet;
  readonly tasks: ReadonlyMap<string, Task>;
}

export interface Task {
  readonly id: string;
  readonly model: string;
  readonly family: TaskFamily;
  readonly createdAt: number;
  updatedAt: number;
  status: TaskStatus;
  gets: number;
  readonly finalOnGet: number;
  readonly end: FinalStatus;
  readonly progress: boolean;
  readonly noUsage: boolean;
  readonly result: TaskResult;
}

const DEFAULT_POLLS = 3;

export const FAMILY_PROTOCOL: Record<TaskFamily, Protocol> = {
  video: 'videos',
  clip: 'videos',
  'digital-human': 'videos',
  music: 'music',
  'music-asset': 'music',
  transcript: 'transcripts',
  avatar: 'avatars',
};

/**
 * The family of a submit body, first match wins: `style_id` → smart clip; `avatar` or `source_video_url` →
 * digital-human video; `content` array → video; `url` string → transcript;
 * `source_url` → avatar; `action` string → music follow-up; `prompt` or `lyrics` → music; else video
 * (whose validation then names the missing `content`).
 */
export function taskFamily(body: unknown): TaskFamily {
  const b = asRecord(body);
  if (b.style_id !== undefined) return 'clip';
  if (b.avatar !== undefined || b.source_video_url !== undefined) return 'digital-human';
  if (Array.isArray(b.content)) return 'video';
  if (typeof b.url === 'string') return 'transcript';
  if (b.source_url !== undefined) return 'avatar';
  if (typeof b.action === 'string') return 'music-asset';
  if (b.prompt !== undefined || b.lyrics !== undefined) return 'music';
  return 'video';
}

/** The protocol a tasks request belongs to: a submit's inferred family, a poll's task (unknown id: videos). */
export function taskProtocol(body: unknown, id: string | undefined, tasks: ReadonlyMap<string, Task>): Protocol {
  if (id === undefined) return FAMILY_PROTOCOL[taskFamily(body)];
  const task = tasks.get(id);
  return task ? FAMILY_PROTOCOL[task.family] : 'videos';
}

function submission(family: TaskFamily, b: Record<string, unknown>, s: SubmitContext): TaskResult | Rejection {
  switch (family) {
    case 'video':
      return videoSubmission(b, s);
    case 'clip':
      return clipSubmission(b, s);
    case 'digital-human':
      return digitalHumanSubmission(b, s);
    case 'music':
      return musicSubmission(b, s);
    case 'music-asset':
      return musicAssetSubmission(b, s);
    case 'transcript':
      return transcriptSubmission(b);
    case 'avatar':
      return avatarSubmission(b);
  }
}

function sendArkError(ctx: Ctx, status: number, message?: string): void {
  const e = vendorError('videos', status, message);
  sendJson(ctx, e.status, e.body, e.headers);
}

export function handleTaskSubmit(ctx: Ctx): void {
  const b = asRecord(ctx.body);
  if (typeof b.model !== 'string') return sendArkError(ctx, 400, 'The parameter `model` specified in the request is not valid.');
  const family = taskFamily(b);
  const id = `cgt-sim${pad(ctx.seq)}`;
  const result = submission(family, b, { id, baseUrl: ctx.sim.baseUrl, scenario: ctx.scenario, tasks: ctx.sim.tasks });
  if ('status' in result) return sendArkError(ctx, result.status, result.message);
  const now = nowSeconds();
  ctx.sim.tasks.set(id, {
    id,
    model: b.model,
    family,
    createdAt: now,
    updatedAt: now,
    status: 'queued',
    gets: 0,
    finalOnGet: ctx.scenario.taskPolls ?? DEFAULT_POLLS,
    end: ctx.scenario.taskEnd ?? 'succeeded',
    progress: ctx.scenario.taskProgress === true,
    noUsage: ctx.scenario.noUsage === true,
    result,
  });
  sendJson(ctx, 200, { id });
}

const FAILURE_NOUN: Record<TaskFamily, string> = {
  video: 'video generation',
  clip: 'smart clip',
  'digital-human': 'digital-human video generation',
  music: 'music generation',
  'music-asset': 'music generation',
  transcript: 'transcription',
  avatar: 'avatar creation',
};

function errorOf(task: Task): { code: string; message: string } | undefined {
  switch (task.status) {
    case 'failed':
      return { code: 'InternalServiceError', message: `The ${FAILURE_NOUN[task.family]} failed (simulated).` };
    case 'expired':
      return { code: 'TaskExpired', message: 'The task expired before it could finish (simulated).' };
    case 'cancelled':
      return { code: 'Cancelled', message: 'The task was cancelled.' };
    default:
      return undefined;
  }
}

/** In flight: floor(100 × (GET n − 1) / (k − 1)), so 0 on the first GET; 100 once succeeded. */
function progressOf(task: Task): number | undefined {
  if (!task.progress) return undefined;
  if (task.status === 'succeeded') return 100;
  if (task.status !== 'queued' && task.status !== 'running') return undefined;
  return Math.floor((100 * (task.gets - 1)) / Math.max(1, task.finalOnGet - 1));
}

function taskView(ctx: Ctx, task: Task): Record<string, unknown> {
  const { result } = task;
  const view: Record<string, unknown> = {
    id: task.id,
    model: task.model,
    status: task.status,
    created_at: task.createdAt,
    updated_at: task.updatedAt,
    ...result.echoed,
  };
  const progress = progressOf(task);
  if (progress !== undefined) view.progress = progress;
  if (task.status === 'succeeded') {
    view.content = result.content;
    if (result.usage && !task.noUsage && !ctx.scenario.noUsage) view.usage = result.usage;
    if (result.duration !== undefined) view.duration = result.duration;
    if (result.framespersecond !== undefined) view.framespersecond = result.framespersecond;
  }
  const error = errorOf(task);
  if (error) view.error = error;
  return view;
}

function settle(task: Task, status: TaskStatus): void {
  if (status === task.status) return;
  task.status = status;
  task.updatedAt = Math.max(task.createdAt, nowSeconds());
}

/** GET n (1-based): final state on GET `task_polls` (default 3); before that queued on the first GET, running after. */
export function handleTaskGet(ctx: Ctx, id: string): void {
  const task = ctx.sim.tasks.get(id);
  if (!task) return sendArkError(ctx, 404, `The specified task ${id} is not found.`);
  if (task.status === 'queued' || task.status === 'running') {
    task.gets++;
    settle(task, task.gets >= task.finalOnGet ? task.end : task.gets === 1 ? 'queued' : 'running');
  }
  sendJson(ctx, 200, taskView(ctx, task));
}

export function handleTaskDelete(ctx: Ctx, id: string): void {
  const task = ctx.sim.tasks.get(id);
  if (!task) return sendArkError(ctx, 404, `The specified task ${id} is not found.`);
  if (task.status !== 'queued' && task.status !== 'running') {
    return sendArkError(ctx, 400, `The task ${id} cannot be cancelled in status ${task.status}.`);
  }
  settle(task, 'cancelled');
  sendJson(ctx, 200, {});
}
