import { FAMILIES } from '../../../commands/task/families';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { SPEECH_ANSWER_BYTES } from '../../../upstream/bounded-body';
import type { ModelConfig } from '../../../config/schema';
import { trackCall } from '../../plugins/lifecycle';
import { parseUsd } from '../../../money/usd';
import type { TaskRow } from '../../../projections/tasks/queries';
import { traceSettlement } from '../../../tracing/spans';
import { zodMessage } from '../../../config/zod-message';
import { speechErrorMessage, type SpeechVoice } from '../../../upstream/protocols/speech';
import type { Route } from '../../../channels/routing';
import { CallSignal } from '../../../upstream/upstream-call';
import { callableModel, callRecord, beginCall, replayRefusal, type CallFacts } from '../../billable-call';
import { holdCall } from '../../call-hold';
import { failedLadder, sendFailed, tryChannels } from '../../channel-ladder';
import { errorBody, GatewayError, type ErrorCode } from '../../errors';
import { releaseFailed, releaseUnsettled } from '../../hold-release';
import type { RouteDoc } from '../../openapi/route-doc';
import { baseUrlOf } from '../../resources/wiki';
import { characterCount, MEDIA_ROUTE, SPEECH_HOLD_GRACE_S, SPEECH_TASK_LIFETIME_S, speakOn, speechCost, speechTimings, type SpeechDeps } from './speech-calls';
import { createGatewayTask, submittedBody } from '../tasks/task-submit';
import { LIST_LIMIT } from '../tasks/task-views';
import { taskFamilyRoutes, type TaskFamilyView } from '../tasks/task-family-routes';
import { resolveVoice } from './voices';
import { callerGroup } from '../../../channels/groups';

/** OpenAI's limit on `input`, in characters (code points). */
export const MAX_SPEECH_CHARACTERS = 4096;
export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
/** What OpenAI answers when `response_format` is not sent. */
const DEFAULT_FORMAT = 'mp3';

const SpeechBody = z.looseObject({
  model: z.string().min(1).describe('A speech model.'),
  input: z
    .string()
    .min(1)
    .refine((s) => characterCount(s) <= MAX_SPEECH_CHARACTERS, `must be at most ${MAX_SPEECH_CHARACTERS} characters`)
    .describe(`The text to speak, 1-${MAX_SPEECH_CHARACTERS} characters (Unicode code points); billed per character.`),
  voice: z
    .union([z.string().min(1), z.looseObject({ id: z.string().min(1) })])
    .describe('A preset voice (`alloy`, …), a voice cloned on this gateway (`voice_…`), or an upstream’s own voice id; as a string or `{id}`.'),
  response_format: z.enum(SPEECH_FORMATS).optional().describe('The audio format (default mp3).'),
  speed: z.number().min(0.25).max(4).optional().describe('0.25-4 (default 1).'),
  async: z.boolean().optional().describe('true: answer at once with a task, poll `GET /v1/audio/speech/{id}` for the audio’s link.'),
});
type SpeechBody = z.output<typeof SpeechBody>;

const AUDIO_TYPES = ['audio/mpeg', 'audio/opus', 'audio/aac', 'audio/flac', 'audio/wav', 'audio/pcm'];

const DOCS: Record<'create' | 'get' | 'list', RouteDoc> = {
  create: {
    operationId: 'createSpeech',
    summary: 'Text to speech',
    description:
      'Holds ceil(characters × per_1k_characters / 1000) (characters: Unicode code points of `input`) and tries up to three speech channels; settles the same amount on success, releases it on failure. Synchronous: the audio bytes with the upstream’s content type, as OpenAI’s endpoint answers. With `async: true`: a speech task `{id, status: pending, model, created_at}`, its audio hosted for 24 hours. A cloned voice goes only to the channel that cloned it.',
    tags: ['media'],
    body: { json: SpeechBody },
    responses: {
      200: { description: 'The audio (synchronous), or the task `{id, status: pending, model, created_at}` (`async: true`).', mediaTypes: [...AUDIO_TYPES, 'application/json'] },
    },
    errors: {
      502: 'No channel could be reached: `upstream_unreachable`.',
      503: 'The model has no speech channel: `no_channel_available`.',
      504: 'The upstream did not answer in time: `upstream_timeout`.',
    },
  },
  get: {
    operationId: 'getSpeech',
    summary: 'Poll an asynchronous speech task',
    tags: ['media'],
    responses: { 200: { description: '`{id, status, model, created_at, updated_at}`; succeeded: `audio_url`, `expires_at`, `response_format`, `content_type`, `characters`; failed: `error`.' } },
    errors: { 404: 'No such task for this account: `not_found`.' },
  },
  list: {
    operationId: 'listSpeech',
    summary: "The account's asynchronous speech tasks, newest first",
    tags: ['media'],
    responses: { 200: { description: '`{data: [speech task]}`.' } },
  },
};

/** Polls and the list of speech tasks. */
const VIEW: TaskFamilyView = {
  family: 'speech',
  body: (row) => speechTaskBody(row),
  get: { doc: DOCS.get },
  list: { doc: DOCS.list, params: ['limit', 'status'], limit: LIST_LIMIT },
};

export function speechRoutes(deps: SpeechDeps) {
  return async (app: FastifyInstance) => {
    app.post(
      '/v1/audio/speech',
      {
        config: {
          ...MEDIA_ROUTE,
          idempotent: true,
          // An audio answer replays whole (the spec lets only b64_json images go unreplayed): up to the
          // largest answer the gateway reads from a speech upstream.
          idempotencyMaxBytes: SPEECH_ANSWER_BYTES,
          mayReplay: (request: FastifyRequest) => mayReplay(deps, request),
          callLog: { endpoint: 'audio.speech', unitType: FAMILIES.speech.unit },
          openapi: DOCS.create,
        },
      },
      (request, reply) => speech(deps, request, reply),
    );
    taskFamilyRoutes(VIEW, deps.queries)(app);
  };
}

/** A speech task as polls and lists show it. */
export function speechTaskBody(row: TaskRow): Record<string, unknown> {
  const body: Record<string, unknown> = { id: row.task_id, status: row.status, model: row.model, created_at: row.created_at, updated_at: row.updated_at };
  const result = row.result ?? {};
  if (row.status === 'succeeded') for (const field of ['audio_url', 'expires_at', 'response_format', 'content_type', 'characters']) if (result[field] !== undefined) body[field] = result[field];
  if (row.status === 'failed') body.error = { code: row.error_code ?? 'task_failed', message: row.error_message ?? '' };
  return body;
}

/** What a speech call sends and is billed, decided before its hold. */
interface SpeechPlan {
  readonly model: ModelConfig;
  readonly routes: readonly Route[];
  /** The client's fields as the upstream gets them (without `model`, `voice`, `async`). */
  readonly fields: Record<string, unknown>;
  /** The voice as the upstream knows it. */
  readonly voice: SpeechVoice;
  readonly characters: number;
  readonly price: bigint;
  readonly amount: bigint;
}

function amountOf(body: SpeechBody, model: ModelConfig): { characters: number; price: bigint; amount: bigint } {
  const characters = characterCount(body.input);
  const price = parseUsd(model.price.per_1k_characters ?? '0');
  return { characters, price, amount: speechCost(characters, price) };
}

/** Whether this key may receive a stored answer of this request: the refusals a new call of the key would meet. */
function mayReplay(deps: SpeechDeps, request: FastifyRequest): GatewayError | null {
  const caller = request.caller!;
  const parsed = SpeechBody.safeParse(request.body ?? {});
  if (!parsed.success) return null; // never stored: only successes are
  return replayRefusal(caller, callableModel(deps.registry, caller.key.settings.allowed_models, parsed.data.model), (model) => amountOf(parsed.data, model).amount);
}

async function speech(deps: SpeechDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const { facts, reject } = beginCall(deps.ledger, deps.now, request, 'audio.speech', 'character');
  const parsed = SpeechBody.safeParse(request.body ?? {});
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const body = parsed.data;
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, body.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  if (body.async === true && !deps.hosted) return reject('invalid_request', 'async: true needs hosted media outputs, which this gateway is not set up with; send the request without it');

  const cloned = await resolveVoice(deps, caller.accountId, body.voice);
  if (cloned && 'invalid' in cloned) return reject('invalid_request', cloned.invalid);
  // A cloned voice exists only on the channel that cloned it.
  const routes = model.kind === 'speech' ? deps.router.scoped(callerGroup(caller)).routes(model.id, 'speech', cloned ? (channel) => channel.id === cloned.channelId : undefined) : [];
  if (routes.length === 0) {
    if (cloned && model.kind === 'speech' && deps.router.hasRoute(model.id, 'speech'))
      return reject('invalid_request', `voice: the voice ${cloned.voiceId} works only with the models of the upstream that cloned it, and \`${model.id}\` is not one of them`);
    return reject('no_channel_available', `The model \`${model.id}\` has no channel for speech.`);
  }
  const { model: _model, voice: _voice, async: _async, ...fields } = body;
  const plan: SpeechPlan = { model, routes, fields, voice: cloned ? cloned.upstreamVoice : body.voice, ...amountOf(body, model) };
  if (body.async === true) return submitSpeechTask(deps, facts, plan, reject, reply);
  return speakNow(deps, facts, plan, reject, reply);
}

/** The synchronous call: hold, the channel ladder, the audio bytes as the upstream sent them. */
async function speakNow(deps: SpeechDeps, facts: CallFacts, plan: SpeechPlan, reject: (code: ErrorCode, message: string) => never, reply: FastifyReply): Promise<unknown> {
  const request = facts.request;
  const caller = request.caller!;
  const timings = speechTimings(deps);
  const holdId = await holdCall(
    deps.ledger,
    facts,
    { amount: plan.amount, purpose: `audio.speech ${plan.model.id}`, ttlSeconds: Math.ceil(timings.ladderMs / 1000) + SPEECH_HOLD_GRACE_S },
    reject,
  );
  const call = new CallSignal(timings.ladderMs);
  const untrack = trackCall(request, call);
  // A client that left ends the call: nobody would receive the audio, so nobody pays for it.
  let clientGone = false;
  const raw = reply.raw;
  const onClose = () => {
    if (raw.writableFinished) return;
    clientGone = true;
    call.abort();
  };
  raw.once('close', onClose);
  let closed = false;
  try {
    const outcome = await tryChannels({ facts, stages: [plan], call, attempt: speakOn(deps, plan.fields, plan.voice, call), stopped: () => clientGone });
    if (outcome.ok && !clientGone) {
      const audio = outcome.value;
      request.callMeter?.charge(plan.amount);
      const record = callRecord(facts, { status: 'success', unit_count: plan.characters, unit_type: 'character' });
      await traceSettlement(request, { holdId, amount: plan.amount, record, attempt: outcome.traced }, () => deps.ledger.settle(caller.accountId, holdId, plan.amount, record));
      closed = true;
      // The upstream's content type is the client's (the SDK reads the bytes whatever it is); nosniff
      // keeps a browser from reading audio as anything else.
      return reply.code(200).header('content-type', audio.contentType).header('x-content-type-options', 'nosniff').send(audio.bytes);
    }
    if (clientGone) {
      // 499 (nginx's "client closed the request") only ever reaches the access log.
      await releaseFailed(deps.ledger, facts, holdId, 'client_disconnected', 'the client disconnected', { unit_type: 'character' });
      closed = true;
      return reply.code(499).type('application/json').send(JSON.stringify(errorBody('chat', new GatewayError('upstream_unreachable', 'the client disconnected'))));
    }
    const failed = failedLadder(outcome.ok ? null : outcome.failure, speechErrorMessage);
    await releaseFailed(deps.ledger, facts, holdId, failed.code, failed.message, { unit_type: 'character' });
    closed = true;
    return sendFailed(reply, failed);
  } catch (error) {
    if (!closed) await releaseUnsettled(deps.ledger, facts, holdId, error, { unit_type: 'character' });
    throw error;
  } finally {
    raw.removeListener('close', onClose);
    call.clear();
    untrack();
  }
}

/**
 * `async: true`: a speech task, visible at once as `pending`, whose call runs in this process after the
 * answer (BackgroundRuns): the same ladder, the audio stored as a hosted output for 24 hours, the task
 * succeeded with its link and the hold settled; no channel's audio ends it `failed`, refunded.
 */
async function submitSpeechTask(deps: SpeechDeps, facts: CallFacts, plan: SpeechPlan, reject: (code: ErrorCode, message: string) => never, reply: FastifyReply): Promise<unknown> {
  const request = facts.request;
  const state = await createGatewayTask(deps, {
    facts,
    family: 'speech',
    model: plan.model,
    reserved: plan.amount,
    billing: { unit: 'character', price: plan.price, per: 1000, cap: true },
    basis: plan.characters,
    params: {},
    lifetimeS: SPEECH_TASK_LIFETIME_S,
    reject,
  });
  // Links point where this request came in (or PUBLIC_BASE_URL); read now, while the request is live.
  const baseUrl = baseUrlOf(request, deps.publicBaseUrl);
  deps.background.start(state.taskId, (signal) => runSpeechTask(deps, { taskId: state.taskId, accountId: state.accountId, facts, plan, baseUrl }, signal));
  return reply.code(200).send(submittedBody(state));
}

interface SpeechRun {
  readonly taskId: string;
  readonly accountId: string;
  readonly facts: CallFacts;
  readonly plan: SpeechPlan;
  readonly baseUrl: string;
}

async function runSpeechTask(deps: SpeechDeps, run: SpeechRun, signal: AbortSignal): Promise<void> {
  const { taskId, facts, plan } = run;
  const call = new CallSignal(speechTimings(deps).ladderMs);
  const interrupt = () => call.endForShutdown();
  signal.addEventListener('abort', interrupt, { once: true });
  try {
    // The claim before any upstream call: a task already claimed by another run, or ended, is left to it.
    if (!(await deps.tasks.handle(taskId, { type: 'Claim', now: deps.now() })).ok) return;
    const outcome = await tryChannels({ facts, stages: [plan], call, attempt: speakOn(deps, plan.fields, plan.voice, call), observed: false });
    if (!outcome.ok) {
      // Interrupted by the shutdown: BackgroundRuns fails the task as interrupted, refunded.
      if (signal.aborted) throw new Error(`speech task ${taskId} was interrupted by the shutdown`);
      const failed = failedLadder(outcome.failure, speechErrorMessage);
      await deps.tasks.finish(taskId, {
        type: 'Fail',
        outcome: 'failed',
        error: { code: failed.code, message: failed.message },
        run: { attempts: facts.attempts, channelId: facts.channelId, inputTokens: 0, outputTokens: 0 },
        now: deps.now(),
      });
      return;
    }
    const audio = outcome.value;
    const format = (plan.fields.response_format as string | undefined) ?? DEFAULT_FORMAT;
    const link = await deps.hosted!.put({ accountId: run.accountId, taskId, name: `speech.${format}`, bytes: audio.bytes, contentType: audio.contentType, now: deps.now(), baseUrl: run.baseUrl });
    await deps.tasks.finish(taskId, {
      type: 'Succeed',
      result: { audio_url: link.url, expires_at: link.expiresAt, response_format: format, content_type: audio.contentType, characters: plan.characters },
      units: plan.characters,
      unitCount: plan.characters,
      resultUrls: [link.url],
      resultExpiresAt: link.expiresAt,
      // The channel that spoke and the attempts it took, for the task's call-log row.
      run: { attempts: facts.attempts, channelId: outcome.route.channel.id, inputTokens: 0, outputTokens: 0 },
      now: deps.now(),
    });
  } finally {
    signal.removeEventListener('abort', interrupt);
    call.clear();
  }
}
