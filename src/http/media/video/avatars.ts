import { FAMILIES } from '../../../commands/task/families';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { TaskService } from '../../../commands/task/service';
import type { ModelRegistry } from '../../../config/registry';
import type { ChannelConfig, ModelConfig, Presets } from '../../../config/schema';
import { parseUsd } from '../../../money/usd';
import type { UrlProbe } from '../../../media-check/port';
import { mediaRefusal, WebUrl } from '../../../media-check/checks';
import { CLIP_LIMITS } from '../../../media-check/rules';
import { isInFlight } from '../../../commands/task/decider';
import type { TaskQueries, TaskRow } from '../../../projections/tasks/queries';
import { zodMessage } from '../../../config/zod-message';
import type { Router } from '../../../channels/routing';
import { beginCall, callableModel, replayRefusal } from '../../billable-call';
import { GatewayError, type ErrorCode } from '../../errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { digitalHumanError, RULE_EIGHT_STATUS } from './digital-human-errors';
import { upTo } from './video-dh';
import { sendRefused, submitUpstreamTask, type TaskSubmitDeps } from '../tasks/task-submit';
import { MEDIA_READ, MEDIA_ROUTE, TASK_ID } from '../tasks/task-views';
import { taskFamilyRoutes, type TaskFamilyView } from '../tasks/task-family-routes';
import { callerGroup } from '../../../channels/groups';

// Avatars (spec "Avatar", "Avatar endpoints"): an avatar IS a task of the `avatar` family. Its upstream
// task (the content-generation tasks API on an `avatars` channel) creates it; that task's upstream id is
// the avatar's reference in later dh-avatar calls. The fee (`per_call` of the avatar model) is held at
// creation, settled when the avatar becomes ready, released in full when it fails.

export interface AvatarDeps extends TaskSubmitDeps {
  readonly registry: ModelRegistry;
  readonly router: Router;
  readonly queries: TaskQueries;
  readonly mediaProbe: UrlProbe;
}

// An avatar's id is its task's id: the call log's `task_id` of its creation finds it.

/** The spec's "Other constants": avatar name 1-20 characters; list up to 200. */
export const AVATAR_NAME_MAX = 20;
export const AVATAR_LIST_LIMIT = 200;
/** The upstream usually takes 5-10 minutes; past an hour the gateway gives up (failed, refunded). */
export const AVATAR_LIFETIME_S = 3600;

const AvatarBody = z.looseObject({
  name: z
    .string()
    .min(1)
    .pipe(upTo(AVATAR_NAME_MAX))
    .describe(`The avatar's name, 1-${AVATAR_NAME_MAX} characters.`),
  source_url: WebUrl.describe('A public http(s) link to the image or video the avatar is made from.'),
  source_kind: z.enum(['image', 'video']).default('image').describe('What `source_url` is: `image` (default) or `video`.'),
  model: z.string().min(1).optional().describe('The avatar model (kind `avatar`) whose `per_call` fee is charged and whose channels create it (default: the first callable one).'),
});
type AvatarBody = z.output<typeof AvatarBody>;

const AvatarIdParam = z.string().min(1).max(200).describe('The avatar id the creation answered with.');

const DOCS: Record<'create' | 'get' | 'list' | 'delete' | 'presets', RouteDoc> = {
  create: {
    operationId: 'createAvatar',
    summary: 'Create an avatar',
    description:
      'Probes `source_url`, holds the avatar model’s `per_call` fee and submits the creation upstream. The avatar is `pending` until the upstream finishes (usually 5-10 minutes): `ready` settles the fee, `failed` releases it in full.',
    tags: ['media'],
    body: { json: AvatarBody },
    responses: { 200: { description: 'The avatar `{id, name, source_kind, status: pending, error: null, created_at}`.' } },
    errors: {
      402: 'The fee is above the available balance: `quota_exceeded` (nothing is submitted).',
      403: 'The key may not use the avatar model: `model_not_allowed` (Errors rule 8).',
      404: 'No such avatar model: `model_not_found` (Errors rule 8).',
      503: 'No avatar model has a channel: `no_channel_available`.',
    },
  },
  get: {
    operationId: 'getAvatar',
    summary: 'An avatar and its creation status',
    tags: ['media'],
    responses: { 200: { description: 'The avatar.' } },
    errors: { 404: 'No such avatar for this account (or deleted): `not_found`.' },
  },
  list: {
    operationId: 'listAvatars',
    summary: "The account's avatars, newest first (up to 200)",
    tags: ['media'],
    responses: { 200: { description: '`{avatars: [avatar]}`.' } },
  },
  delete: {
    operationId: 'deleteAvatar',
    summary: 'Delete an avatar (ready or failed)',
    tags: ['media'],
    params: { id: AvatarIdParam },
    responses: { 200: { description: '`{id, deleted: true}`.' } },
    errors: { 400: 'The avatar is still `pending`: `invalid_request`.', 404: 'No such avatar for this account: `not_found`.' },
  },
  presets: {
    operationId: 'listAvatarPresets',
    summary: 'The platform’s free preset avatars',
    tags: ['media'],
    responses: { 200: { description: '`{avatars: [{id, name}]}`; each id works as `avatar` in dh-avatar calls.' } },
  },
};

/** The avatar and the account's avatars (the spec's list: every status, up to 200, no query). */
const VIEW: TaskFamilyView = {
  family: 'avatar',
  body: (row) => avatarBody(row),
  get: { doc: DOCS.get, idParam: AvatarIdParam, ids: TASK_ID, notFound: (id) => avatarNotFound(id) },
  list: { doc: DOCS.list, params: [], limit: { default: AVATAR_LIST_LIMIT, max: AVATAR_LIST_LIMIT }, key: 'avatars' },
};

export function avatarRoutes(deps: AvatarDeps) {
  return async (app: FastifyInstance) => {
    app.post(
      '/v1/videos/avatars',
      {
        config: {
          ...MEDIA_ROUTE,
          idempotent: true,
          mayReplay: (request: FastifyRequest) => mayReplay(deps, request),
          callLog: { endpoint: 'videos.avatars', unitType: FAMILIES.avatar.unit },
          openapi: DOCS.create,
        },
      },
      (request, reply) => createAvatar(deps, request, reply),
    );
    app.get('/v1/videos/avatars/presets', { config: { ...MEDIA_READ, openapi: DOCS.presets } }, async () => ({ avatars: presetsOf(deps.registry).avatars.map(({ id, name }) => ({ id, name })) }));
    taskFamilyRoutes(VIEW, deps.queries)(app);
    app.delete<{ Params: { id: string } }>('/v1/videos/avatars/:id', { config: { ...MEDIA_READ, openapi: DOCS.delete } }, async (request) => {
      const row = await ownAvatar(deps, request.caller!.accountId, request.params.id);
      const deleted = await deps.tasks.handle(row.task_id, { type: 'Delete', now: deps.now() });
      if (!deleted.ok) {
        if (deleted.error.code === 'task_in_flight') throw new GatewayError('invalid_request', `The avatar ${request.params.id} is still pending; it can be deleted once it is ready or failed.`);
        throw avatarNotFound(request.params.id);
      }
      await deps.viewsAt(deleted.position);
      return { id: row.task_id, deleted: true };
    });
  };
}

export const presetsOf = (registry: ModelRegistry): Presets => registry.config.presets ?? { voices: [], avatars: [] };

/** The avatar record, the spec's fields exactly. */
export function avatarBody(row: TaskRow): Record<string, unknown> {
  return {
    id: row.task_id,
    name: row.params.name ?? null,
    source_kind: row.params.source_kind ?? 'image',
    status: row.status,
    error: row.status === 'failed' ? row.error_message || row.error_code || 'the avatar could not be created' : null,
    created_at: new Date(row.created_at * 1000).toISOString(),
  };
}

function avatarNotFound(id: string): GatewayError {
  return new GatewayError('not_found', `No avatar with id ${JSON.stringify(id.slice(0, 200))} exists for this account.`);
}

async function ownAvatar(deps: AvatarDeps, accountId: string, id: string): Promise<TaskRow> {
  const row = TASK_ID.test(id) ? await deps.queries.get(accountId, 'avatar', id) : null;
  if (!row) throw avatarNotFound(id);
  return row;
}

/**
 * The avatar model a creation is billed at and submitted through: the one named (of kind `avatar`), else
 * the first callable avatar model with an avatars channel that the key may use.
 */
function avatarModel(deps: AvatarDeps, allowList: readonly string[] | null, named: string | undefined): ModelConfig | { code: ErrorCode; message: string } {
  if (named !== undefined) {
    const model = callableModel(deps.registry, allowList, named);
    if (!('code' in model) && model.kind !== 'avatar') return { code: 'invalid_request', message: `model: \`${model.id}\` is not an avatar model` };
    return model;
  }
  const candidates = deps.registry.models.filter((m) => m.kind === 'avatar' && m.callable && deps.router.hasRoute(m.id, 'avatars'));
  const usable = candidates.find((m) => deps.registry.allows(allowList, m.id));
  if (usable) return usable;
  if (candidates.length > 0) return { code: 'model_not_allowed', message: `This API key is not allowed to use the model \`${candidates[0]!.id}\`, nor any other avatar model.` };
  return { code: 'no_channel_available', message: 'No avatar model of this gateway can create avatars.' };
}

const feeOf = (model: ModelConfig) => parseUsd(model.price.per_call ?? '0');

function mayReplay(deps: AvatarDeps, request: FastifyRequest): GatewayError | null {
  const caller = request.caller!;
  const parsed = AvatarBody.safeParse(request.body ?? {});
  if (!parsed.success) return null; // never stored: only successes are
  const refusal = replayRefusal(caller, avatarModel(deps, caller.key.settings.allowed_models, parsed.data.model), feeOf);
  return refusal ? digitalHumanError(refusal) : null;
}

/** `POST /v1/videos/avatars`: everything checked (the source probed) before the fee is held. */
async function createAvatar(deps: AvatarDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const { facts, reject } = beginCall(deps.ledger, deps.now, request, 'videos.avatars', 'call', RULE_EIGHT_STATUS);
  const parsed = AvatarBody.safeParse(request.body ?? {});
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const body: AvatarBody = parsed.data;
  const model = avatarModel(deps, caller.key.settings.allowed_models, body.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  const routes = deps.router.scoped(callerGroup(caller)).routes(model.id, 'avatars');
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for avatars.`);
  const refused = await mediaRefusal(deps.mediaProbe, [{ field: 'source_url', url: body.source_url, rule: body.source_kind === 'video' ? CLIP_LIMITS.sourceVideo : CLIP_LIMITS.materialImage }]);
  if (refused) return reject('invalid_request', refused);

  const fee = feeOf(model);
  const submitted = await submitUpstreamTask(deps, {
    facts,
    family: 'avatar',
    model,
    routes,
    reserved: fee,
    billing: { unit: 'call', price: fee, per: 1, cap: true },
    basis: 1,
    params: { name: body.name, source_kind: body.source_kind },
    fields: { name: body.name, source_url: body.source_url, source_kind: body.source_kind },
    lifetimeS: AVATAR_LIFETIME_S,
    reject,
  });
  if (!submitted.ok) return sendRefused(reply, submitted.answer);
  const { state } = submitted;
  return reply.code(200).send({
    id: state.taskId,
    name: body.name,
    source_kind: body.source_kind,
    status: 'pending',
    error: null,
    created_at: new Date(state.createdAt * 1000).toISOString(),
  });
}

/** What a dh-avatar call's `avatar` means: the upstream's reference, and the channel that made it (a preset: none). */
export interface AvatarReference {
  readonly reference: string;
  readonly channel: ChannelConfig | null;
}

/**
 * The `avatar` of a dh-avatar call: one of the account's own avatars that is ready (its upstream
 * reference), or a preset (passed as is). Unknown, foreign, deleted or not ready: the caller's 400.
 * Read from the task's stream, not a view: an avatar ready a moment ago works.
 */
export async function resolveAvatar(
  tasks: Pick<TaskService, 'state'>,
  registry: ModelRegistry,
  accountId: string,
  id: string,
): Promise<AvatarReference | { readonly invalid: string }> {
  if (presetsOf(registry).avatars.some((p) => p.id === id)) return { reference: id, channel: null };
  if (!TASK_ID.test(id)) return { invalid: `avatar: ${JSON.stringify(id.slice(0, 200))} is neither an avatar of this account nor a preset avatar` };
  const state = await tasks.state(id);
  if (state.phase === 'none' || state.family !== 'avatar' || state.accountId !== accountId || !state.visible) return { invalid: `avatar: no avatar ${id} exists for this account` };
  if (state.phase !== 'succeeded' || !state.upstream) {
    return { invalid: `avatar: the avatar ${id} is not ready (${isInFlight(state.phase) ? 'pending' : 'failed'})` };
  }
  return { reference: state.upstream.taskId, channel: registry.config.channels.find((c) => c.id === state.upstream!.channelId) ?? null };
}
