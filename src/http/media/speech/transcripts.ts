import { urlRefusal } from '../../../media-check/checks';
import type { UrlProbe } from '../../../media-check/port';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { isFinished, type TaskError, type TaskState } from '../../../commands/task/decider';
import type { Outcome } from '../../../commands/task/families';
import { taskCall } from '../../../commands/task/money';
import type { ModelRegistry } from '../../../config/registry';
import { trackCall } from '../../plugins/lifecycle';
import { countCall } from '../../../metrics/http';
import type { BackgroundRuns } from '../../../tasks/background';
import { cancelTask } from '../../../upstream/protocols/tasks';
import { zodMessage } from '../../../config/zod-message';
import type { Route, Router } from '../../../channels/routing';
import { CallSignal } from '../../../upstream/upstream-call';
import { callableModel } from '../../billable-call';
import { errorBody, GatewayError, upstreamErrorBody, type ErrorCode } from '../../errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { perCall, perCallPlan, perCallReplayRefusal } from '../tasks/per-call';
import { sendRefused, submitUpstreamTask, type TaskSubmitDeps } from '../tasks/task-submit';
import { callerGroup } from '../../../channels/groups';

export interface TranscriptTimings {
  /** How long the request waits for the transcript, submission included (the spec's "about 55 s"). */
  readonly waitMs: number;
  /** How often the upstream task is asked about while the request waits. */
  readonly pollEveryMs: number;
}

export const TRANSCRIPT_TIMINGS: TranscriptTimings = { waitMs: 55_000, pollEveryMs: 1_000 };

/** The task outlives the wait by this much: the request's own time-out ends it first, the expiry sweep is the backstop. */
const DEADLINE_SLACK_S = 5;

export interface TranscriptDeps extends TaskSubmitDeps {
  readonly registry: ModelRegistry;
  readonly router: Router;
  /** The gateway's own runs: a transcript being waited for is one (a restart cannot resume it). */
  readonly background: BackgroundRuns;
  readonly timings: TranscriptTimings;
  /** The URL policy on `url` (src/media-check/url-policy.ts). */
  readonly mediaProbe: UrlProbe;
}

const TranscriptBody = z.looseObject({
  model: z.string().min(1),
  url: z.string().min(1).max(8192).describe('A public http(s) link to the audio or video to transcribe.'),
  language: z.string().min(1).max(32).optional().describe('The spoken language (e.g. `en`), when known; absent: detected upstream.'),
});
type TranscriptBody = z.output<typeof TranscriptBody>;

const MEDIA = { auth: 'key', shape: 'chat', trace: true } as const;

const DOC: RouteDoc = {
  operationId: 'extractTranscript',
  summary: 'Transcribe an audio or video link (synchronous, up to about 55 s)',
  description:
    "Reserves the model's `per_call` price, submits the upstream task and waits for its end in the request (about 55 s, submission included). Settled when the text is answered; refunded in full on any failure, the time-out included (a transcript nobody received is never billed). Fields other than `model` go upstream as sent.",
  tags: ['media'],
  body: { json: TranscriptBody },
  responses: { 200: { description: '`{id, model, text, language, segments?}`.' } },
  errors: {
    500: 'The upstream task failed, was cancelled upstream or delivered no text: `upstream_error` (refunded).',
    502: 'No channel could be reached: `upstream_unreachable`.',
    503: 'The model has no transcripts channel (`no_channel_available`), or the gateway shut down while waiting (`gateway_shutting_down`, refunded).',
    504: 'No transcript within about 55 s, or the upstream task expired: `upstream_timeout` (refunded, the upstream task cancelled).',
  },
};

export function transcriptRoutes(deps: TranscriptDeps) {
  return async (app: FastifyInstance) => {
    app.post(
      '/v1/transcripts/extract',
      {
        config: {
          ...MEDIA,
          idempotent: true,
          mayReplay: (request: FastifyRequest) => replayRefusal(deps, request),
          callLog: { endpoint: 'transcripts.extract', unitType: 'call' },
          openapi: DOC,
        },
      },
      (request, reply) => extract(deps, request, reply),
    );
  };
}

function replayRefusal(deps: TranscriptDeps, request: FastifyRequest): GatewayError | null {
  const parsed = TranscriptBody.safeParse(request.body ?? {});
  if (!parsed.success) return null; // never stored: only successes are
  return perCallReplayRefusal(deps.registry, request, parsed.data.model);
}

/** Only links the upstream can fetch: http(s), parsable. */
function checkUrl(url: string): string | null {
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) return 'url: must be a public http(s) URL';
  return null;
}

async function extract(deps: TranscriptDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const { facts, reject } = perCall(deps, request, 'transcripts.extract');
  // Known from the start: a client that leaves while its transcript is made is not billed for it.
  let clientGone = false;
  let call: CallSignal | null = null;
  reply.raw.once('close', () => {
    if (reply.raw.writableFinished) return;
    clientGone = true;
    call?.abort();
  });

  const parsed = TranscriptBody.safeParse(request.body ?? {});
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const body: TranscriptBody = parsed.data;
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, body.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  const invalid = checkUrl(body.url) ?? (await urlRefusal(deps.mediaProbe, [{ field: 'url', url: body.url }]));
  if (invalid) return reject('invalid_request', invalid);
  const routes = model.kind === 'transcript' ? deps.router.scoped(callerGroup(caller)).routes(model.id, 'transcripts') : [];
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for transcripts.`);

  const { waitMs } = deps.timings;
  const left = () => waitMs - (performance.now() - facts.startedAt);
  const { model: _model, ...fields } = body;
  const submitted = await submitUpstreamTask(
    deps,
    {
      facts,
      family: 'transcript',
      model,
      routes,
      ...perCallPlan(model),
      params: body.language !== undefined ? { language: body.language } : {},
      fields,
      lifetimeS: Math.ceil(waitMs / 1000) + DEADLINE_SLACK_S,
      reject,
    },
    // Nobody else follows it: this request is the only one that can hand its text over.
    { follow: false, budgetMs: Math.max(1, left()) },
  );
  if (!submitted.ok) return sendRefused(reply, submitted.answer);

  call = new CallSignal(Math.max(1, left()));
  if (clientGone) call.abort();
  // The shutdown ends the wait when its grace is over: the task is then failed, refunded.
  const untrack = trackCall(request, call);
  let state: TaskState;
  try {
    state = await waitAsRun(deps, submitted.state, routes, call, () => clientGone);
  } finally {
    call.clear();
    untrack();
  }
  countCall(request, facts.startedAt, taskCall(state));
  if (state.phase === 'succeeded') {
    const result = state.result ?? {};
    return reply.code(200).send({
      id: state.taskId,
      model: state.model,
      text: result.text,
      language: result.language ?? body.language ?? null,
      ...(result.segments !== undefined ? { segments: result.segments } : {}),
    });
  }
  const failed = failureAnswer(state, clientGone);
  return reply.code(failed.status).type('application/json').send(JSON.stringify(failed.body));
}

/**
 * Waits for the task's end as one of the gateway's own runs (`BackgroundRuns`), so that the recovery at
 * start does not take it for an orphan while this request waits; the run ends the task itself.
 */
function waitAsRun(deps: TranscriptDeps, task: TaskState, routes: readonly Route[], call: CallSignal, clientGone: () => boolean): Promise<TaskState> {
  return new Promise<TaskState>((resolve, reject) => {
    deps.background.start(task.taskId, async (signal) => {
      // The gateway's shutdown reaches the wait through either path (the request's drain, or its runs').
      const stop = () => call.endForShutdown();
      signal.addEventListener('abort', stop, { once: true });
      try {
        resolve(await waitForEnd(deps, task, routes, call, clientGone));
      } catch (error) {
        reject(error);
        throw error; // the run's failure fails the task, refunded
      } finally {
        signal.removeEventListener('abort', stop);
      }
    });
  });
}

/** Polls the upstream task every `pollEveryMs` until it ends, or until the wait is over (then gives up on it). */
async function waitForEnd(deps: TranscriptDeps, task: TaskState, routes: readonly Route[], call: CallSignal, clientGone: () => boolean): Promise<TaskState> {
  for (;;) {
    // A poll that hangs past the wait is not waited for: giving up ends the task, its answer then changes nothing.
    if (!call.aborted) await untilAborted(deps.poller.run(task.taskId), call);
    const state = await deps.tasks.state(task.taskId);
    if (isFinished(state.phase)) return state;
    if (call.aborted) return giveUp(deps, state, routes, call, clientGone());
    await pause(deps.timings.pollEveryMs, call);
  }
}

/** Why the wait ended early, as the task's failure: each refunds in full. */
function endingOf(call: CallSignal, clientGone: boolean, waitMs: number): { outcome: Outcome; error: TaskError } {
  if (call.shuttingDown) return { outcome: 'failed', error: { code: 'gateway_interrupted', message: 'the gateway shut down while the transcript was made; nothing was charged, submit it again' } };
  if (clientGone) return { outcome: 'cancelled', error: { code: 'client_disconnected', message: 'the client disconnected before the transcript was ready; nothing was charged' } };
  return { outcome: 'expired', error: { code: 'upstream_timeout', message: `the transcript was not ready within ${Math.round(waitMs / 1000)} s; nothing was charged` } };
}

async function giveUp(deps: TranscriptDeps, state: TaskState, routes: readonly Route[], call: CallSignal, clientGone: boolean): Promise<TaskState> {
  const { outcome, error } = endingOf(call, clientGone, deps.timings.waitMs);
  const ended = await deps.tasks.finish(state.taskId, { type: 'Fail', outcome, error, now: deps.now() });
  // It may have ended meanwhile (a poll that came back late): then that ending stands, as it was closed.
  if (!ended.ok) return deps.tasks.state(state.taskId);
  const channel = routes.find((r) => r.channel.id === state.upstream?.channelId)?.channel;
  if (channel && state.upstream) {
    // Best effort, not awaited: the client's answer does not wait for the upstream's.
    void cancelTask(channel, state.upstream.taskId, { timeoutMs: 10_000, ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}) }).catch(() => false);
  }
  return ended.state;
}

/** The ended task's failure as the client is told: a status and a body in the chat error shape. */
export function failureAnswer(state: Pick<TaskState, 'phase' | 'error'>, clientGone: boolean): { status: number; body: unknown } {
  const error = state.error ?? { code: 'task_failed', message: 'the transcript failed; nothing was charged' };
  const gateway = (code: ErrorCode) => {
    const refusal = new GatewayError(code, error.message);
    return { status: refusal.status, body: errorBody('chat', refusal) };
  };
  // 499 (nginx's "client closed the request") only ever reaches the access log.
  if (clientGone && error.code === 'client_disconnected') return { status: 499, body: errorBody('chat', new GatewayError('upstream_unreachable', error.message)) };
  if (error.code === 'gateway_interrupted') return gateway('gateway_shutting_down');
  if (error.code === 'internal_error') return gateway('internal_error');
  // Our own time-out, the expiry, or the upstream's: the transcript did not come in time.
  if (state.phase === 'expired' || error.code === 'upstream_timeout') return gateway('upstream_timeout');
  // A failed upstream task has no status of its own: a refusal of its input (the upstream's parameter
  // codes) is the caller's 400, anything else an upstream 5xx (Errors, rule 5) — never 502, which means
  // the connection failed (rule 6).
  const status = /^(invalid|bad_?request)/i.test(error.code) ? 400 : 500;
  return { status, body: upstreamErrorBody('chat', status, error.message) };
}

/** Resolves with `work`, or earlier when the call is aborted (the work goes on, its failure ignored). */
function untilAborted(work: Promise<unknown>, call: CallSignal): Promise<void> {
  work.catch(() => {});
  if (call.aborted) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = () => resolve();
    call.once('abort', done);
    work.then(
      () => {
        call.removeListener('abort', done);
        resolve();
      },
      (error: unknown) => {
        call.removeListener('abort', done);
        reject(error);
      },
    );
  });
}

function pause(ms: number, call: CallSignal): Promise<void> {
  if (call.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      call.removeListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    call.once('abort', done);
  });
}
