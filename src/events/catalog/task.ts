import { z } from 'zod';
import { Int32, Timestamp, Units, defineEvent, type EventOf } from './codec';

/**
 * A media task: `task-{taskId}`. Every transition of an asynchronous generation (video, music,
 * async images and speech, transcripts) is one of these events; the task views are projections of
 * them. The money of a task moves on its account's wallet stream, through the hold named here.
 */
export const taskStream = (taskId: string) => `task-${taskId}`;

/** Transcripts and voice clones are short tasks: the client waits for their end. An avatar is the
 * upstream task that creates it: its id is the avatar's id, its upstream task id the avatar's reference. */
export const TASK_FAMILIES = ['video', 'image', 'music', 'speech', 'transcript', 'voice', 'avatar'] as const;
export type TaskFamily = (typeof TASK_FAMILIES)[number];

/**
 * How the task is billed, fixed when it is created, so that its settlement never reads a price
 * the configuration may have changed since. cost(q) = ceil(q × price / per) nano-dollars for a
 * delivered quantity q of `unit` (seconds are counted in milliseconds: price per second, per 1000).
 * `cap`: the settlement never exceeds the reservation (otherwise it may, where the spec allows).
 */
export const TaskBilling = z.object({
  unit: z.enum(['millisecond', 'token', 'image', 'call', 'character', 'voice']),
  price: Units,
  per: z.number().int().positive(),
  cap: z.boolean(),
});
export type TaskBilling = z.output<typeof TaskBilling>;

const Json = z.record(z.string(), z.unknown());

export const TaskError = z.object({ code: z.string(), message: z.string() });

/** The task exists and its hold is reserved. `visible`: polls and lists show it; tasks that must
 * first be accepted by their upstream (video, music, transcripts) become visible with TaskSubmitted. */
export const TaskCreated = defineEvent(
  'TaskCreated',
  z.object({
    task_id: z.string(),
    family: z.enum(TASK_FAMILIES),
    account_id: z.string(),
    key_id: z.string().nullable(),
    model: z.string(),
    /** The call-log endpoint, e.g. `videos.generations`. */
    endpoint: z.string(),
    request_id: z.string(),
    hold_id: z.string(),
    reserved: Units,
    billing: TaskBilling,
    /** The quantity the reservation stands for (12 s of video: 12000 ms): what is billed when the
     * upstream delivers without saying how much. */
    basis: z.number().int().nonnegative(),
    /** The client's fields the task's answers echo (video: `ratio`, `resolution`, … only as sent). */
    params: Json,
    visible: z.boolean(),
    /** Past this moment a task still in flight is expired and refunded. */
    deadline: Timestamp,
    at: Timestamp,
  }),
);

/** An upstream accepted the task: where to ask about it from now on. */
export const TaskSubmitted = defineEvent(
  'TaskSubmitted',
  z.object({ channel_id: z.string(), upstream_task_id: z.string(), upstream_model: z.string(), attempts: Int32.positive(), at: Timestamp }),
);

/** No upstream accepted the task: the client got the error, the task stays invisible, its hold is released. */
export const TaskSubmissionRefused = defineEvent('TaskSubmissionRefused', z.object({ error: TaskError, attempts: Int32.nonnegative(), at: Timestamp }));

/** queued → running (the upstream, or the gateway for the tasks it runs itself, began the work). */
export const TaskStarted = defineEvent('TaskStarted', z.object({ at: Timestamp }));

/** The upstream reported progress (0-100); recorded only when it changes. */
export const TaskProgressed = defineEvent('TaskProgressed', z.object({ progress: Int32.min(0).max(100), at: Timestamp }));

/** What a call the gateway ran itself for the task did (an async image's channel ladder), for the call
 * log: the channels tried, the one tried last, and the tokens the upstream reported. */
export const TaskRun = z.object({ attempts: Int32.nonnegative(), channel_id: z.string().nullable(), input_tokens: Int32.nonnegative(), output_tokens: Int32.nonnegative() });
export type TaskRun = z.output<typeof TaskRun>;

/** The task delivered. `units`: the quantity billed (milliseconds, tokens, images, …); `unit_count`
 * what the call log shows (seconds rounded, images, …); `charge` the cost decided from `billing`. */
export const TaskSucceeded = defineEvent(
  'TaskSucceeded',
  z.object({
    result: Json,
    units: z.number().int().nonnegative(),
    unit_count: Int32.nonnegative(),
    charge: Units,
    result_urls: z.array(z.string()),
    result_expires_at: Timestamp.nullable(),
    run: TaskRun.optional(),
    at: Timestamp,
  }),
);

/** The task ended without a result; its hold is released in full. `result`: what a family's
 * final answer must still carry (an async image's upstream error answer, replayed byte for byte). */
export const TaskFailed = defineEvent(
  'TaskFailed',
  z.object({ outcome: z.enum(['failed', 'expired', 'cancelled']), error: TaskError, result: Json.optional(), run: TaskRun.optional(), at: Timestamp }),
);

/** The owner deleted what the finished task made (an avatar): it leaves polls and lists and can no
 * longer be used. Its money was settled or released when it ended; deleting moves none. */
export const TaskDeleted = defineEvent('TaskDeleted', z.object({ at: Timestamp }));

export const taskEvents = [TaskCreated, TaskSubmitted, TaskSubmissionRefused, TaskStarted, TaskProgressed, TaskSucceeded, TaskFailed, TaskDeleted] as const;

export type TaskEvent = EventOf<(typeof taskEvents)[number]>;
