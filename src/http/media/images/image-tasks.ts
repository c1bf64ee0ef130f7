import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import type { Ledger } from '../../../commands/ledger';
import type { TaskState } from '../../../commands/task/decider';
import { isInFlight, type Phase } from '../../../commands/task/families';
import type { TaskService } from '../../../commands/task/service';
import type { Position } from '../../../events/store/port';
import { formatUsd } from '../../../money/usd';
import type { HostedOutputs } from '../../../objects/hosted';
import type { TaskQueries, TaskRow } from '../../../projections/tasks/queries';
import type { BackgroundRuns } from '../../../tasks/background';
import { CallSignal } from '../../../upstream/upstream-call';
import type { RouteDoc } from '../../openapi/route-doc';
import { isStoredAnswer, keepAnswer, loadAnswer, unkeptAnswer } from './image-answers';
import { imageAnswer, runImageLadder, type ImageTimings, type LadderOutcome } from './image-ladder';
import type { ImageCall } from './image-request';
import { createGatewayTask, submittedBody } from '../tasks/task-submit';
import { LIST_LIMIT } from '../tasks/task-views';
import { taskFamilyRoutes, type TaskFamilyView } from '../tasks/task-family-routes';

// The asynchronous mode of the image endpoints: a call submitted with `async: true` runs as an
// `image` task in this process (BackgroundRuns), through the same channel ladder as a synchronous
// call, and its polls end with the very answer the synchronous call would have given.

export interface ImageTaskDeps {
  readonly ledger: Ledger;
  readonly now: () => number;
  readonly tasks: TaskService;
  readonly queries: TaskQueries;
  readonly background: BackgroundRuns;
  /** Where answers too large for an event (or carrying image bytes) are kept for 24 hours. */
  readonly hosted: HostedOutputs;
  /** Resolves once the views have applied the event at a position (read your writes). */
  readonly viewsAt: (position: Position | null) => Promise<void>;
  readonly timings: ImageTimings;
  readonly dispatcher?: Dispatcher;
}

/** The spec's "image async task maximum run": the task's deadline, and its ladder's budget. */
export const IMAGE_TASK_LIFETIME_S = 280;

/**
 * Reserves the call's worst case as the synchronous mode does (a refusal is the same 402, with no task
 * and no upstream call), creates the task and starts its run: answered at once, `{id, status: queued,
 * model, created_at}` (200, like every task submission of this gateway).
 */
export async function submitImageTask(deps: ImageTaskDeps, call: ImageCall, reply: FastifyReply): Promise<FastifyReply> {
  const state = await createGatewayTask(deps, {
    facts: call.facts,
    family: 'image',
    model: call.model,
    reserved: call.unitPrice * BigInt(call.units),
    billing: { unit: 'image', price: call.unitPrice, per: 1, cap: true },
    basis: call.units,
    params: {},
    lifetimeS: IMAGE_TASK_LIFETIME_S,
    reject: call.reject,
  });
  // The run reads the uploaded files after this request is over: its own hold on them.
  const releaseFiles = call.holdFiles();
  deps.background.start(state.taskId, async (signal) => {
    try {
      await runImageTask(deps, call, state, signal);
    } finally {
      releaseFiles();
    }
  });
  return reply.code(200).send(submittedBody(state));
}

/** Milliseconds until a deadline of the task's clock (whole seconds), counted on the timers' clock. */
const msUntil = (deadline: number, now: number) => Math.max(0, (deadline - now) * 1000 - (Date.now() % 1000));

/**
 * The task's run: running, then the synchronous call's ladder (without the keep-alive, which only a
 * waiting client needs) within what is left of the task's 280 s, then its answer kept and the task
 * ended: settled on the images returned (none: released), or failed and released. A run the shutdown
 * cuts throws, and BackgroundRuns fails its task as interrupted.
 */
async function runImageTask(deps: ImageTaskDeps, call: ImageCall, task: TaskState, signal: AbortSignal): Promise<void> {
  const { facts } = call;
  const taskId = task.taskId;
  // The claim before any upstream call: ended already (the sweep found it past its deadline) or claimed by
  // another run, there is nothing left for this one to do.
  const claimed = await deps.tasks.handle(taskId, { type: 'Claim', now: deps.now() });
  if (!claimed.ok) return;
  const budget = new CallSignal(Math.min(deps.timings.ladderMs, msUntil(task.deadline, deps.now())));
  const interrupt = () => budget.endForShutdown();
  signal.addEventListener('abort', interrupt, { once: true });
  let outcome: LadderOutcome;
  try {
    outcome = await runImageLadder({ timings: deps.timings, now: deps.now, ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}) }, facts, call.routes, call.image, budget, { observed: false });
  } finally {
    budget.clear();
    signal.removeEventListener('abort', interrupt);
  }
  if (signal.aborted || outcome.kind === 'abandoned') throw new Error(`the run of task ${taskId} was interrupted`);

  const now = deps.now();
  const final = imageAnswer(outcome, now);
  const owner = { accountId: task.accountId, taskId, now };
  const run = {
    attempts: facts.attempts,
    channelId: facts.channelId,
    inputTokens: final.ok ? final.delivered.inputTokens : 0,
    outputTokens: final.ok ? final.delivered.outputTokens : 0,
  };
  if (final.ok) {
    const delivered = final.delivered;
    // Images without a link are bytes in the answer (b64_json).
    const kept = await keepAnswer(deps.hosted, owner, { status: final.status, body: final.body, carriesImages: delivered.urls.length < delivered.count });
    await deps.tasks.finish(taskId, {
      type: 'Succeed',
      result: kept,
      units: Math.min(delivered.count, call.units),
      unitCount: delivered.count,
      resultUrls: delivered.urls,
      resultExpiresAt: delivered.expiresAt,
      run,
      now,
    });
  } else {
    const kept = await keepAnswer(deps.hosted, owner, { status: final.status, body: final.body, carriesImages: false });
    await deps.tasks.finish(taskId, {
      type: 'Fail',
      // The ladder ran out of the task's time: the task expired (shown as `failed`, like every ending but success).
      outcome: budget.expired ? 'expired' : 'failed',
      error: { code: final.code, message: final.message },
      result: kept,
      run,
      now,
    });
  }
  // The call's metrics come with the closing of its hold (TaskService), like every task's.
}

/** `{id, status, model, created_at}`: what a poll shows while the task is queued or running. */
const pendingBody = (row: TaskRow) => ({ id: row.task_id, status: row.status, model: row.model, created_at: row.created_at });

/**
 * A list item: the spec's fields. `unit_count` and `cost` are null while the task is in flight (and
 * `cost` until its hold is seen closed); `cost` is a USD decimal string, as the call log shows it.
 */
export function imageTaskItem(row: TaskRow): Record<string, unknown> {
  const inFlight = isInFlight(row.phase as Phase);
  const item: Record<string, unknown> = {
    id: row.task_id,
    status: row.status,
    model: row.model,
    endpoint: row.endpoint.replace(/^images\./, ''),
    created_at: row.created_at,
    started_at: row.started_at,
    completed_at: row.completed_at,
    unit_count: inFlight ? null : row.phase === 'succeeded' ? (row.unit_count ?? 0) : 0,
    cost: row.money === 'held' ? null : formatUsd(row.cost),
    error_code: row.error_code,
    request_id: row.request_id,
  };
  if (row.phase === 'succeeded') item.result = { urls: row.result_urls, expires_at: row.result_expires_at };
  return item;
}

const DOCS: Record<'get' | 'list', RouteDoc> = {
  get: {
    operationId: 'getImageTask',
    summary: 'Poll an async image task (generations and edits)',
    description:
      'While the task is queued or running: 202 with `{id, status, model, created_at}`. Once it has ended, any other status is the final answer, with the status code and body bytes the synchronous call would have given: the images (200), an upstream 4xx/5xx passed through, or the gateway\'s own error (502 `upstream_unreachable`, 504 `upstream_timeout` for a task past its 280 s, 503 `gateway_interrupted` for a task cut by a restart, 500 `internal_error`). A b64_json answer is kept 24 hours: after that 410 `result_expired`.',
    tags: ['media'],
    responses: {
      200: { description: 'The final answer of a task that returned images: the synchronous response, byte for byte.' },
      202: { description: '`{id, status: queued | running, model, created_at}`: poll again in 2-3 s.' },
    },
    errors: {
      404: 'No such task for this account: `not_found`.',
      410: 'The kept answer (b64_json, kept 24 hours) has been deleted: `result_expired`.',
      502: 'The final answer: no channel could be reached (`upstream_unreachable`).',
      503: 'The final answer: the gateway stopped while the task ran (`gateway_interrupted`; refunded).',
      504: 'The final answer: the task ran past its 280 s (`upstream_timeout`; refunded).',
    },
  },
  list: {
    operationId: 'listImageTasks',
    summary: "The account's async image tasks, newest first",
    tags: ['media'],
    responses: {
      200: {
        description:
          '`{data: [{id, status, model, endpoint, created_at, started_at, completed_at, unit_count, cost, error_code, request_id, result?: {urls, expires_at}}], next_cursor}`; `next_cursor` is null on the last page.',
      },
    },
  },
};

/** Polls of async image tasks (generations and edits alike) and their list. */
const view = (deps: ImageTaskDeps): TaskFamilyView => ({
  family: 'image',
  body: imageTaskItem,
  get: {
    doc: DOCS.get,
    answer: async (row, reply) => {
      if (isInFlight(row.phase as Phase)) return reply.code(202).send(pendingBody(row));
      const answer = isStoredAnswer(row.result) ? await loadAnswer(deps.hosted, row.result, deps.now()) : unkeptAnswer(row.error_code, row.error_message);
      return reply.code(answer.status).type(answer.contentType).send(answer.body);
    },
  },
  list: { doc: DOCS.list, params: ['status', 'from', 'to', 'limit', 'cursor'], limit: { ...LIST_LIMIT, strict: true } },
});

/** `GET /v1/images/generations/{id}` (polls of generations and edits alike) and the list. */
export function imageTaskRoutes(deps: ImageTaskDeps) {
  return async (app: FastifyInstance) => {
    taskFamilyRoutes(view(deps), deps.queries)(app);
  };
}
