import { FAMILIES } from '../../../commands/task/families';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { isWebUrl, urlRefusal } from '../../../media-check/checks';
import type { ModelConfig } from '../../../config/schema';
import { trackCall } from '../../plugins/lifecycle';
import { parseUsd } from '../../../money/usd';
import type { TaskRow } from '../../../projections/tasks/queries';
import { zodMessage } from '../../../config/zod-message';
import { speechErrorMessage, type SpeechVoice } from '../../../upstream/protocols/speech';
import type { Route } from '../../../channels/routing';
import { CallSignal } from '../../../upstream/upstream-call';
import { beginCall, callableModel, replayRefusal } from '../../billable-call';
import { failedLadder, sendFailed, tryChannels } from '../../channel-ladder';
import { GatewayError, type ErrorCode } from '../../errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { cloneOn, MEDIA_ROUTE, SPEECH_TASK_LIFETIME_S, speechTimings, type SpeechDeps } from './speech-calls';
import { createGatewayTask } from '../tasks/task-submit';
import { taskFamilyRoutes } from '../tasks/task-family-routes';
import { callerGroup } from '../../../channels/groups';

/** The gateway's id of a cloned voice: `voice_` and its task's id. */
const VOICE_ID = /^voice_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;
export const voiceIdOf = (taskId: string) => `voice_${taskId}`;

/** The most voices one list shows (newest first), like the spec's avatar list. */
export const VOICE_LIST_LIMIT = 200;
export const VOICE_NAME_MAX = 64;

const codePoints = (s: string) => [...s].length;

const VoiceBody = z.looseObject({
  name: z
    .string()
    .min(1)
    .refine((s) => codePoints(s) <= VOICE_NAME_MAX, `must be at most ${VOICE_NAME_MAX} characters`)
    .describe(`The voice's name, 1-${VOICE_NAME_MAX} characters.`),
  audio_url: z
    .string()
    .min(1)
    .max(4096)
    .refine(isWebUrl, 'must be a public http(s) URL of the recording')
    .describe('A public http(s) link to the recording to clone (the upstream fetches it).'),
  model: z.string().min(1).optional().describe('The speech model whose `per_voice` price the clone is billed at, and whose channels clone it (default: the first callable speech model).'),
});
type VoiceBody = z.output<typeof VoiceBody>;

const cloneDoc = (path: string, operationId: string): RouteDoc => ({
  operationId,
  summary: path.endsWith('voice-clone') ? 'Clone a voice (the same as POST /v1/audio/voices)' : 'Clone a voice',
  description:
    'Clones the voice of a recording through the upstream of a speech model, while the client waits, and bills that model’s `per_voice` price (refunded when the clone fails; the upstream’s error is passed through). The answer’s `id` works as `voice` in `POST /v1/audio/speech` with the models of the upstream that cloned it.',
  tags: ['media'],
  body: { json: VoiceBody },
  responses: { 200: { description: 'The voice: `{id, name, status: ready, created_at, model}`.' } },
  errors: {
    502: 'No channel could be reached: `upstream_unreachable`.',
    503: 'The model has no speech channel: `no_channel_available`.',
    504: 'The upstream did not answer in time: `upstream_timeout`.',
  },
});

const listDoc: RouteDoc = {
  operationId: 'listVoices',
  summary: "The account's cloned voices and the platform's preset voices",
  tags: ['media'],
  responses: { 200: { description: '`{voices: [{id, name, status, created_at, model, error?}], presets: [{id, name}]}`: own voices newest first.' } },
};

export function voiceRoutes(deps: SpeechDeps) {
  return async (app: FastifyInstance) => {
    for (const [path, operationId] of [
      ['/v1/audio/voices', 'createVoice'],
      ['/v1/audio/voice-clone', 'cloneVoice'],
    ] as const) {
      app.post(
        path,
        {
          config: {
            ...MEDIA_ROUTE,
            idempotent: true,
            mayReplay: (request: FastifyRequest) => mayReplay(deps, request),
            callLog: { endpoint: 'audio.voices', unitType: FAMILIES.voice.unit },
            openapi: cloneDoc(path, operationId),
          },
        },
        (request, reply) => cloneVoice(deps, request, reply),
      );
    }
    // Voices are listed only: a clone's answer is its end, there is nothing to poll.
    taskFamilyRoutes(
      {
        family: 'voice',
        body: voiceBody,
        list: {
          doc: listDoc,
          params: ['limit', 'status'],
          limit: { default: VOICE_LIST_LIMIT, max: VOICE_LIST_LIMIT, describe: `Voices to list (default and most: ${VOICE_LIST_LIMIT}).` },
          key: 'voices',
          more: () => ({ presets: presetVoices(deps) }),
        },
      },
      deps.queries,
    )(app);
  };
}

const presetVoices = (deps: SpeechDeps) => (deps.registry.config.presets?.voices ?? []).map(({ id, name }) => ({ id, name }));

/** A voice as lists show it. */
export function voiceBody(row: TaskRow): Record<string, unknown> {
  const body: Record<string, unknown> = { id: voiceIdOf(row.task_id), name: row.params.name ?? null, status: row.status, created_at: row.created_at, model: row.model };
  if (row.status === 'failed') body.error = { code: row.error_code ?? 'voice_failed', message: row.error_message ?? '' };
  return body;
}

/**
 * The speech model a clone is billed at and cloned through: the one named, else the first callable
 * speech model with a speech channel that the key may use. A message means the client's error.
 */
function cloneModel(deps: SpeechDeps, allowList: readonly string[] | null, named: string | undefined): ModelConfig | { code: ErrorCode; message: string } {
  if (named !== undefined) return callableModel(deps.registry, allowList, named);
  const candidates = deps.registry.models.filter((m) => m.kind === 'speech' && m.callable && deps.router.hasRoute(m.id, 'speech'));
  const usable = candidates.find((m) => deps.registry.allows(allowList, m.id));
  if (usable) return usable;
  if (candidates.length > 0) return { code: 'model_not_allowed', message: `This API key is not allowed to use the model \`${candidates[0]!.id}\`, nor any other speech model that can clone voices.` };
  return { code: 'no_channel_available', message: 'No speech model of this gateway can clone voices.' };
}

function mayReplay(deps: SpeechDeps, request: FastifyRequest): GatewayError | null {
  const caller = request.caller!;
  const parsed = VoiceBody.safeParse(request.body ?? {});
  if (!parsed.success) return null; // never stored: only successes are
  return replayRefusal(caller, cloneModel(deps, caller.key.settings.allowed_models, parsed.data.model), (model) => parseUsd(model.price.per_voice ?? '0'));
}

/**
 * `POST /v1/audio/voices`: a `voice` task the client waits for. The hold (per_voice) and the task come
 * first, visible as `pending`; the upstream's clone makes it `ready` and settles the hold; a clone no
 * channel made ends it `failed` and releases the hold, and the client gets the upstream's error.
 */
async function cloneVoice(deps: SpeechDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const { facts, reject } = beginCall(deps.ledger, deps.now, request, 'audio.voices', 'voice');
  const parsed = VoiceBody.safeParse(request.body ?? {});
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const { model: named, ...fields } = parsed.data;
  const model = cloneModel(deps, caller.key.settings.allowed_models, named);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  const refused = deps.mediaProbe ? await urlRefusal(deps.mediaProbe, [{ field: 'audio_url', url: fields.audio_url }]) : null;
  if (refused) return reject('invalid_request', refused);
  const routes: Route[] = model.kind === 'speech' ? deps.router.scoped(callerGroup(caller)).routes(model.id, 'speech') : [];
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for speech, so no voice can be cloned with it.`);

  const price = parseUsd(model.price.per_voice ?? '0');
  const created = await createGatewayTask(deps, {
    facts,
    family: 'voice',
    model,
    reserved: price,
    billing: { unit: 'voice', price, per: 1, cap: true },
    basis: 1,
    params: { name: fields.name },
    lifetimeS: SPEECH_TASK_LIFETIME_S,
    reject,
  });
  const taskId = created.taskId;
  const call = new CallSignal(speechTimings(deps).ladderMs);
  const untrack = trackCall(request, call);
  try {
    const outcome = await tryChannels({ facts, stages: [{ routes }], call, attempt: cloneOn(deps, fields, call) });
    const now = deps.now();
    if (outcome.ok) {
      const voice = outcome.value;
      const done = await deps.tasks.finish(taskId, {
        type: 'Succeed',
        // Where the voice lives: a speech call with it goes to this channel only, with this id.
        result: { upstream_voice_id: voice.id, channel_id: outcome.route.channel.id },
        units: 1,
        unitCount: 1,
        resultUrls: [],
        resultExpiresAt: null,
        run: { attempts: facts.attempts, channelId: outcome.route.channel.id, inputTokens: 0, outputTokens: 0 },
        now,
      });
      if (!done.ok) throw new Error(`voice task ${taskId} could not succeed: ${done.error.message}`);
      await deps.viewsAt(done.position);
      return reply.code(200).send({ id: voiceIdOf(taskId), name: fields.name, status: 'ready', created_at: created.createdAt, model: model.id });
    }
    const failed = failedLadder(outcome.failure, speechErrorMessage);
    const ended = await deps.tasks.finish(taskId, {
      type: 'Fail',
      outcome: 'failed',
      error: { code: failed.code, message: failed.message },
      run: { attempts: facts.attempts, channelId: facts.channelId, inputTokens: 0, outputTokens: 0 },
      now,
    });
    if (ended.ok) await deps.viewsAt(ended.position);
    return sendFailed(reply, failed);
  } catch (error) {
    // A fault of the gateway's own ends the task now, refunded, rather than at its deadline. A task
    // already ended (the refusal above) is left as it is.
    if (!(error instanceof GatewayError)) {
      const message = `internal error; the request id is ${request.id}`;
      await deps.tasks.finish(taskId, { type: 'Fail', outcome: 'failed', error: { code: 'internal_error', message }, now: deps.now() }).catch(() => {});
    }
    throw error;
  } finally {
    call.clear();
    untrack();
  }
}

/** A cloned voice as a speech call uses it: the upstream's id (in the form the client used) and the
 * channel that made it, the only one that knows it. */
export interface ClonedVoiceRoute {
  readonly voiceId: string;
  readonly upstreamVoice: SpeechVoice;
  readonly channelId: string;
}

/**
 * The voice of a speech call: a voice this account cloned (`voice_<uuid>`, as a string or `{id}`) is
 * its upstream id on its channel; any other value (a preset, an upstream's own id) goes upstream as is.
 * An id of the gateway's form that is not one of the account's ready voices is the caller's error:
 * no upstream could know it. Read from the task's stream, not a view: a voice cloned a moment ago works.
 */
export async function resolveVoice(deps: { readonly tasks: Pick<SpeechDeps['tasks'], 'state'> }, accountId: string, voice: SpeechVoice): Promise<ClonedVoiceRoute | null | { invalid: string }> {
  const id = typeof voice === 'string' ? voice : voice.id;
  const match = VOICE_ID.exec(id);
  if (!match) return null;
  const state = await deps.tasks.state(match[1]!);
  if (state.phase === 'none' || state.family !== 'voice' || state.accountId !== accountId) return { invalid: `voice: no voice ${id} exists for this account` };
  // Where the voice lives: the clone's result names the upstream's id and the channel that holds it.
  const upstreamId = state.result?.upstream_voice_id;
  const channelId = state.result?.channel_id;
  if (state.phase !== 'succeeded' || typeof upstreamId !== 'string' || typeof channelId !== 'string')
    return { invalid: `voice: the voice ${id} is not ready (${state.phase === 'created' || state.phase === 'queued' || state.phase === 'running' ? 'pending' : 'failed'})` };
  return { voiceId: id, upstreamVoice: typeof voice === 'string' ? upstreamId : { ...voice, id: upstreamId }, channelId };
}
