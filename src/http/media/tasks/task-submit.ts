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
import { traceAttempt } from '../../../tracing/spans';
import { submitTask, tasksErrorMessage } from '../../../upstream/protocols/tasks';
import type { Route } from '../../../channels/routing';
import { CallSignal, type Failure } from '../../../upstream/upstream-call';
import type { TaskPoller } from '../../../tasks/poller';
import { attemptAnswered, attemptFailed } from '../../../channels/attempt';
import { failureSummary, type CallFacts } from '../../billable-call';
import { mayHaveBeenAccepted } from '../../../channels/failover';
import { holdCall } from '../../call-hold';
import { GatewayError, upstreamErrorBody, type ErrorCode } from '../../errors';
import { releaseUnsettled } from '../../hold-release';
import { tryJson } from '../../../upstream/json';

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
  const { state: created } = await reserveAndCreate(deps, req, false);
  const taskId = created.taskId;

  const call = new CallSignal(Math.min(deps.submitTimeoutMs * req.routes.length, options.budgetMs ?? Number.POSITIVE_INFINITY));
  const untrack = trackCall(request, call);
  const account = request.caller?.accountId ?? null;
  let failure: Failure | null = null;
  try {
    for (const route of req.routes) {
      facts.attempts += 1;
      facts.channelId = route.channel.id;
      request.callMeter?.attempt();
      const traced = traceAttempt(request, route, facts.attempts);
      const startedAt = performance.now();
      const answer = await submitTask(route.channel, route.upstreamModel, req.fields, {
        timeoutMs: deps.submitTimeoutMs,
        signal: call,
        ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
      });
      request.callMeter?.answered(route.channel.id, answer.ok ? null : answer.failure);
      if (answer.ok) {
        attemptAnswered(route, startedAt, account);
        traced?.answered(200);
        const submitted = await deps.tasks.handle(taskId, {
          type: 'RecordSubmission',
          channelId: route.channel.id,
          upstreamTaskId: answer.value.id,
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
      if (answer.failure.kind === 'status') traced?.answered(answer.failure.status);
      traced?.failed(answer.failure);
      const verdict = attemptFailed(route, answer.failure, call, startedAt, account);
      failure = verdict.failure;
      // A submission that timed out, or was answered without a readable task id, may have created the task
      // upstream: another channel would make a second one.
      if (!verdict.next || mayHaveBeenAccepted(answer.failure)) break;
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

  const f = failure ?? { kind: 'unreachable' as const, message: 'no channel could be reached' };
  const summary = failureSummary(f, tasksErrorMessage);
  // Its row (and its metrics) come with the release of its hold.
  await deps.tasks.finish(taskId, { type: 'RefuseSubmission', error: { code: summary.code, message: summary.message }, attempts: facts.attempts, now: deps.now() });
  // A failed connection (502), a time-out (504), the shutdown (503): the gateway's own error.
  if (f.kind !== 'status') throw new GatewayError(summary.code as ErrorCode, summary.message);
  // Passed through unchanged when the upstream spoke the chat error shape; else put into it.
  const passed = (tryJson(f.body) as { error?: { message?: unknown } } | null)?.error?.message !== undefined ? f.body : JSON.stringify(upstreamErrorBody('chat', f.status, summary.message));
  return { ok: false, answer: { status: f.status, body: passed, headers: f.headers['retry-after'] ? { 'retry-after': f.headers['retry-after'] } : {} } };
}


/**
 * Reserves the task's worst case and creates it, visible at once (its polls answer from now on). The
 * caller then starts its run (`BackgroundRuns.start`), which ends the task through `TaskService.finish`;
 * a hold refused is a rejected call with no task.
 */
export async function createGatewayTask(deps: Pick<TaskSubmitDeps, 'ledger' | 'tasks' | 'now' | 'viewsAt'>, req: GatewayTaskRequest): Promise<TaskState> {
  const { state, position } = await reserveAndCreate(deps, req, true);
  await deps.viewsAt(position);
  return state;
}

/** The hold (a refusal is a rejected call, thrown through `reject`), then the task that owns it from
 * then on: every ending of the task closes the hold, with the task's call-log row. */
async function reserveAndCreate(
  deps: Pick<TaskSubmitDeps, 'ledger' | 'tasks' | 'now'>,
  req: GatewayTaskRequest,
  visible: boolean,
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
