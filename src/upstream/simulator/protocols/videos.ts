/**
 * Content-generation video tasks (ModelArk style):
 *   POST /api/v3/contents/generations/tasks → {id}
 *   GET  /api/v3/contents/generations/tasks/{id} → the task
 *   DELETE /api/v3/contents/generations/tasks/{id} → cancels a task still in flight
 */
import { asArray, asRecord } from '../conversation';
import { vendorError } from '../errors';
import { nowSeconds, pad, sendJson, type Ctx, type VideoTask } from '../http';

export const VIDEO_FPS = 24;
const DEFAULT_POLLS = 3;

/** Frame size used for the token count, by resolution (16:9). */
const DIMS: Record<string, [number, number]> = {
  '480p': [864, 480],
  '720p': [1280, 720],
  '1080p': [1920, 1080],
  '2k': [2560, 1440],
  '4k': [3840, 2160],
};

/** completion_tokens = ceil(W × H × 24 fps × duration / 1024), W × H of the resolution at 16:9. */
export function videoTokens(resolution: string, duration: number): number {
  const [w, h] = DIMS[resolution.toLowerCase()] ?? DIMS['720p']!;
  return Math.ceil((w * h * VIDEO_FPS * duration) / 1024);
}

export function videoPrompt(body: unknown): string {
  return asArray(asRecord(body).content)
    .map(asRecord)
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string)
    .join('\n');
}

/** `--duration 5` / `--dur 5` style flags in the prompt text. */
function flag(text: string, names: string[]): string | undefined {
  for (const name of names) {
    const m = new RegExp(`--${name}\\s+(\\S+)`).exec(text);
    if (m) return m[1];
  }
  return undefined;
}

function sendArkError(ctx: Ctx, status: number, message?: string): void {
  const e = vendorError('videos', status, message);
  sendJson(ctx, e.status, e.body, e.headers);
}

export function handleVideoSubmit(ctx: Ctx): void {
  const b = asRecord(ctx.body);
  if (typeof b.model !== 'string') return sendArkError(ctx, 400, 'The parameter `model` specified in the request is not valid.');
  const text = videoPrompt(b);
  if (!Array.isArray(b.content) || text === '') {
    return sendArkError(ctx, 400, 'The parameter `content` specified in the request is not valid: a text item is required.');
  }
  const duration = Number(b.duration ?? flag(text, ['duration', 'dur']) ?? 5);
  const resolution = String(b.resolution ?? flag(text, ['resolution', 'rs']) ?? '720p');
  const echoed: Record<string, unknown> = {};
  for (const key of ['ratio', 'resolution', 'seed', 'frames', 'generate_audio', 'watermark', 'camera_fixed']) {
    if (b[key] !== undefined) echoed[key] = b[key];
  }
  const now = nowSeconds();
  const task: VideoTask = {
    id: `cgt-sim${pad(ctx.seq)}`,
    model: b.model,
    createdAt: now,
    updatedAt: now,
    status: 'queued',
    gets: 0,
    finalOnGet: ctx.scenario.taskPolls ?? DEFAULT_POLLS,
    fails: ctx.scenario.taskFailed === true,
    noUsage: ctx.scenario.noUsage === true,
    duration: Number.isFinite(duration) && duration > 0 ? Math.round(duration) : 5,
    resolution,
    echoed,
    returnLastFrame: b.return_last_frame === true,
  };
  ctx.sim.tasks.set(task.id, task);
  sendJson(ctx, 200, { id: task.id });
}

function taskView(ctx: Ctx, task: VideoTask): Record<string, unknown> {
  const view: Record<string, unknown> = {
    id: task.id,
    model: task.model,
    status: task.status,
    created_at: task.createdAt,
    updated_at: task.updatedAt,
    ...task.echoed,
  };
  if (task.status === 'succeeded') {
    const tokens = videoTokens(task.resolution, task.duration);
    view.content = {
      video_url: `${ctx.sim.baseUrl}/files/${task.id}.mp4`,
      ...(task.returnLastFrame ? { last_frame_url: `${ctx.sim.baseUrl}/files/${task.id}-last.png` } : {}),
    };
    if (!task.noUsage && !ctx.scenario.noUsage) view.usage = { completion_tokens: tokens, total_tokens: tokens };
    view.duration = task.duration;
    view.framespersecond = VIDEO_FPS;
  } else if (task.status === 'failed') {
    view.error = { code: 'InternalServiceError', message: 'The video generation failed (simulated).' };
  } else if (task.status === 'cancelled') {
    view.error = { code: 'Cancelled', message: 'The task was cancelled.' };
  }
  return view;
}

/** GET n (1-based): final state on GET `task_polls` (default 3); before that queued on the first GET, running after. */
export function handleVideoGet(ctx: Ctx, id: string): void {
  const task = ctx.sim.tasks.get(id);
  if (!task) return sendArkError(ctx, 404, `The specified task ${id} is not found.`);
  if (task.status === 'queued' || task.status === 'running') {
    task.gets++;
    const next = task.gets >= task.finalOnGet ? (task.fails ? 'failed' : 'succeeded') : task.gets === 1 ? 'queued' : 'running';
    if (next !== task.status) {
      task.status = next;
      task.updatedAt = Math.max(task.createdAt, nowSeconds());
    }
  }
  sendJson(ctx, 200, taskView(ctx, task));
}

export function handleVideoDelete(ctx: Ctx, id: string): void {
  const task = ctx.sim.tasks.get(id);
  if (!task) return sendArkError(ctx, 404, `The specified task ${id} is not found.`);
  if (task.status !== 'queued' && task.status !== 'running') {
    return sendArkError(ctx, 400, `The task ${id} cannot be cancelled in status ${task.status}.`);
  }
  task.status = 'cancelled';
  task.updatedAt = Math.max(task.createdAt, nowSeconds());
  sendJson(ctx, 200, {});
}
