import { randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import type { Ledger } from '../../../commands/ledger';
import type { TaskState } from '../../../commands/task/decider';
import { FAMILIES } from '../../../commands/task/families';
import type { TaskService } from '../../../commands/task/service';
import type { ModelConfig } from '../../../config/schema';
import type { Position } from '../../../events/store/port';
import type { TaskBilling, TaskFamily } from '../../../events/catalog';
import { trackCall } from '../../plugins/lifecycle';
import type { UpstreamAttempt } from '../../../tracing/spans';
import { submitTask, tasksErrorMessage } from '../../../upstream/protocols/tasks';
import type { Route } from '../../../channels/routing';
import { CallSignal } from '../../../upstream/upstream-call';
import type { TaskPoller } from '../../../tasks/poller';
import type { CallFacts } from '../../billable-call';
import { failedLadder, tryChannels } from '../../channel-ladder';
import { holdCall } from '../../call-hold';
import type { ErrorCode } from '../../errors';
import { releaseUnsettled } from '../../hold-release';

export interface TaskSubmitDeps {
  readonly ledger: Ledger;
  readonly tasks: TaskService;
  readonly poller: TaskPoller;
  readonly now: () => number;
  /** The upstream's time limit for accepting a task (the spec's 60 s for video). */
  readonly submitTimeoutMs: number;
  /** Resolves once the views have applied the event at a position: a task is answered only once its
   * first poll can find it (read your writes). */
  readonly viewsAt: (position: Position | null) => Promise<void>;
  readonly dispatcher?: Dispatcher;
}

/** The spec's time limit for an upstream to accept a task (video: 60 s). */
export const TASK_SUBMIT_TIMEOUT_MS = 60_000;

/** A hold outlives its task's deadline by this much: the task's own expiry releases it first, the sweeper is the backstop. */
export const TASK_HOLD_GRACE_S = 600;

export interface UpstreamTaskRequest extends GatewayTaskRequest {
  readonly routes: readonly Route[];
  /** The request's own fields as the upstream takes them (each channel sets its `model`). */
  readonly fields: Record<string, unknown>;
}

/** A task to reserve and create. */
export interface GatewayTaskRequest {
  readonly facts: CallFacts;
  readonly family: TaskFamily;
  readonly model: ModelConfig;
  readonly reserved: bigint;
  readonly billing: TaskBilling;
  /** The quantity the reservation stands for (see TaskCreated.basis). */
  readonly basis: number;
  /** What the task's polls echo. */
  readonly params: Record<string, unknown>;
  /** How long the task may run before the gateway expires it, in seconds. */
  readonly lifetimeS: number;
  readonly reject: (code: ErrorCode, message: string) => never;
}

/** The upstream's refusal as the client gets it: its status and its body, in the chat error shape. */
export interface RefusedAnswer {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string>;
}

export type Submitted = { readonly ok: true; readonly state: TaskState } | { readonly ok: false; readonly answer: RefusedAnswer };

/** How a submission is run beyond its request. */
export interface SubmitOptions {
  /** Whether the poller follows the accepted task from now on (default true). A task whose request
   * waits for its end itself (a transcript) is not followed: no other process may settle it. */
  readonly follow?: boolean;
  /** The whole submission's time limit over every channel tried (default: `submitTimeoutMs` per channel),
   * for a request that has a budget of its own (a transcript's 55 s). */
  readonly budgetMs?: number;
}

/**
 * Reserves a task's worst case, creates the task, and submits it to up to three channels (5xx or a failed
 * connection tries the next; a time-out or a 2xx without a task id ends it, as the upstream may have
 * created the task; a 4xx is the caller's and is passed through). An accepted
 * task is followed by the poller from now on (unless `options.follow` is false); a refused one is never
 * visible, its hold released with its call-log row. A refusal of the hold (402 and the like) is a
 * rejected call with no task at all.
 */
export async function submitUpstreamTask(deps: TaskSubmitDeps, req: UpstreamTaskRequest, options: SubmitOptions = {}): Promise<Submitted> {
  const { facts } = req;
  const request = facts.request;
  const { state: created } = await reserveAndCreate(deps, req, { visible: false });
  const taskId = created.taskId;

  const call = new CallSignal(Math.min(deps.submitTimeoutMs * req.routes.length, options.budgetMs ?? Number.POSITIVE_INFINITY));
  const untrack = trackCall(request, call);
  let outcome;
  try {
    // A submission that timed out, or was answered without a readable task id, may have created the task
    // upstream: the ladder sends it to no other channel (`mayHaveBeenAccepted`).
    outcome = await tryChannels({ facts, stages: [req], call, attempt: (route, traced) => submitOn(deps, req, route, traced, call) });
    if (outcome.ok) {
      const { route } = outcome;
      const submitted = await deps.tasks.handle(taskId, {
        type: 'RecordSubmission',
        channelId: route.channel.id,
        upstreamTaskId: outcome.value.id,
        upstreamModel: route.upstreamModel,
        attempts: facts.attempts,
        now: deps.now(),
      });
      if (!submitted.ok) throw new Error(`task ${taskId}: the upstream's acceptance could not be recorded: ${submitted.error.message}`);
      // A queue that cannot take the job now (Redis away) must not fail an accepted task: the sweep
      // adopts every upstream task in flight that has no poll job.
      if (options.follow !== false)
        await deps.poller.follow(taskId).catch((error: unknown) => request.log.warn({ err: error, taskId }, 'could not queue the poll job of an accepted task; the sweep adopts it'));
      await deps.viewsAt(submitted.position);
      return { ok: true, state: submitted.state };
    }
  } catch (error) {
    // A fault of the gateway's own (a write that failed): the task ends now, refunded, not at its deadline.
    const message = `internal error; the request id is ${request.id}`;
    await deps.tasks.finish(taskId, { type: 'RefuseSubmission', error: { code: 'internal_error', message }, attempts: facts.attempts, now: deps.now() }).catch(() => {});
    throw error;
  } finally {
    call.clear();
    untrack();
  }

  const failed = failedLadder(outcome.failure, tasksErrorMessage);
  // Its row (and its metrics) come with the release of its hold.
  await deps.tasks.finish(taskId, { type: 'RefuseSubmission', error: { code: failed.code, message: failed.message }, attempts: facts.attempts, now: deps.now() });
  // A failed connection (502), a time-out (504), the shutdown (503): the gateway's own error.
  if (failed.gatewayError) throw failed.gatewayError;
  return { ok: false, answer: { status: failed.status, body: failed.body, headers: failed.headers } };
}

/** One submission to one channel; the span is told the upstream's status (the task protocol reads the answer whole). */
async function submitOn(deps: TaskSubmitDeps, req: UpstreamTaskRequest, route: Route, traced: UpstreamAttempt | null, call: CallSignal) {
  const answer = await submitTask(route.channel, route.upstreamModel, req.fields, {
    timeoutMs: deps.submitTimeoutMs,
    signal: call,
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
  });
  if (answer.ok) traced?.answered(200);
  else if (answer.failure.kind === 'status') traced?.answered(answer.failure.status);
  return answer;
}

/**
 * Reserves the task's worst case and creates it, visible at once (its polls answer from now on). The
 * caller then starts its run (`BackgroundRuns.start`), which ends the task through `TaskService.finish`;
 * a hold refused is a rejected call with no task.
 */
export async function createGatewayTask(deps: Pick<TaskSubmitDeps, 'ledger' | 'tasks' | 'now' | 'viewsAt'>, req: GatewayTaskRequest): Promise<TaskState> {
  const { state, position } = await reserveAndCreate(deps, req, { visible: true });
  await deps.viewsAt(position);
  return state;
}

/** The hold (a refusal is a rejected call, thrown through `reject`), then the task that owns it from
 * then on: every ending of the task closes the hold, with the task's call-log row. */
async function reserveAndCreate(
  deps: Pick<TaskSubmitDeps, 'ledger' | 'tasks' | 'now'>,
  req: GatewayTaskRequest,
  /** `visible`: whether the task's polls find it from now on, or only once its upstream accepted it. */
  { visible }: { readonly visible: boolean },
): Promise<{ state: TaskState; position: Position | null }> {
  const { facts } = req;
  const request = facts.request;
  const caller = request.caller!;
  const holdId = await holdCall(deps.ledger, facts, { amount: req.reserved, purpose: `${facts.endpoint} ${req.model.id}`, ttlSeconds: req.lifetimeS + TASK_HOLD_GRACE_S }, req.reject);
  const taskId = randomUUID();
  const now = deps.now();
  try {
    const created = await deps.tasks.handle(taskId, {
      type: 'CreateTask',
      taskId,
      family: req.family,
      accountId: caller.accountId,
      keyId: caller.keyId,
      model: req.model.id,
      endpoint: facts.endpoint,
      requestId: request.id,
      holdId,
      reserved: req.reserved,
      billing: req.billing,
      basis: req.basis,
      params: req.params,
      visible,
      deadline: now + req.lifetimeS,
      now,
    });
    if (!created.ok) throw new Error(`task ${taskId} could not be created: ${created.error.message}`);
    request.callRecorded = true;
    return { state: created.state, position: created.position };
  } catch (error) {
    await releaseUnsettled(deps.ledger, facts, holdId, error);
    throw error;
  }
}

/** The answer to an accepted submission: `{id, status, model, created_at}`. */
export function submittedBody(state: TaskState): Record<string, unknown> {
  return { id: state.taskId, status: FAMILIES[state.family].statusOf(state.phase), model: state.model, created_at: state.createdAt };
}

export function sendRefused(reply: FastifyReply, answer: RefusedAnswer): FastifyReply {
  for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
  return reply.code(answer.status).type('application/json').send(answer.body);
}
