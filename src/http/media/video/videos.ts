import { FAMILIES } from '../../../commands/task/families';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ModelRegistry } from '../../../config/registry';
import { videoKindOf } from '../../../config/video-kind';
import type { TaskQueries, TaskRow } from '../../../projections/tasks/queries';
import { zodMessage } from '../../../config/zod-message';
import type { Router } from '../../../channels/routing';
import { beginCall, callableModel, replayRefusal } from '../../billable-call';
import type { GatewayError } from '../../errors';
import { digitalHumanError, RULE_EIGHT_STATUS } from './digital-human-errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { sendRefused, submittedBody, submitUpstreamTask, type TaskSubmitDeps } from '../tasks/task-submit';
import type { UrlProbe } from '../../../media-check/port';
import type { ClipTemplates } from '../../../clip/templates';
import { VIDEO_SKUS, videoSkuOf } from './video-skus';
import { LIST_LIMIT, MEDIA_ROUTE } from '../tasks/task-views';
import { taskFamilyRoutes, type TaskFamilyView } from '../tasks/task-family-routes';
import { callerGroup } from '../../../channels/groups';

export interface VideoDeps extends TaskSubmitDeps {
  readonly registry: ModelRegistry;
  readonly router: Router;
  readonly queries: TaskQueries;
  readonly mediaProbe: UrlProbe;
  readonly clipTemplates: ClipTemplates;
}

/** Every kind of SKU's body, once each (the three clip kinds share one). */
const SUBMISSION_BODY = z.union([...new Set(Object.values(VIDEO_SKUS).map((sku) => sku.schema as z.ZodType))] as [z.ZodType, z.ZodType, ...z.ZodType[]]);

const DOCS: Record<'create' | 'get' | 'list', RouteDoc> = {
  create: {
    operationId: 'createVideo',
    summary: 'Submit a video task',
    description:
      'Reserves the worst case (the per-second price of the resolution tier × `duration`, 12 s when absent; a token-billed reference video: × (duration + 30 s)) and submits the task upstream (60 s). Settled on the delivered seconds (or tokens), refunded in full on failure, expiry or cancellation.',
    tags: ['media'],
    // The model's kind of SKU picks the body (standard: `content`; digital humans and smart clip: their own
    // fields, docs/media.md): any of them.
    body: { json: SUBMISSION_BODY },
    responses: { 200: { description: '`{id, status: queued, model, created_at}`.' } },
    errors: { 502: 'No channel could be reached: `upstream_unreachable`.', 503: 'The model has no video channel: `no_channel_available`.', 504: 'The upstream did not accept the task within 60 s: `upstream_timeout`.' },
  },
  get: {
    operationId: 'getVideo',
    summary: 'Poll a video task',
    tags: ['media'],
    responses: { 200: { description: 'The video task: the spec\'s fields, each when it applies.' } },
    errors: { 404: 'No such task for this account: `not_found`.' },
  },
  list: {
    operationId: 'listVideos',
    summary: "The account's video tasks, newest first",
    tags: ['media'],
    responses: { 200: { description: '`{data: [video task]}`.' } },
  },
};

/** Polls and the list of video tasks. */
const VIEW: TaskFamilyView = {
  family: 'video',
  body: (row) => videoTaskBody(row),
  get: { doc: DOCS.get },
  list: { doc: DOCS.list, params: ['limit', 'status'], limit: LIST_LIMIT },
};


export function videoRoutes(deps: VideoDeps) {
  return async (app: FastifyInstance) => {
    app.post(
      '/v1/videos/generations',
      {
        config: {
          ...MEDIA_ROUTE,
          idempotent: true,
          mayReplay: (request: FastifyRequest) => mayReplay(deps, request),
          callLog: { endpoint: 'videos.generations', unitType: FAMILIES.video.unit },
          openapi: DOCS.create,
        },
      },
      (request, reply) => submitVideo(deps, request, reply),
    );
    taskFamilyRoutes(VIEW, deps.queries)(app);
  };
}

/** The video task object: the spec's fields, each only when it applies, in the spec's order. */
export function videoTaskBody(row: TaskRow): Record<string, unknown> {
  const result = row.result ?? {};
  const inFlight = row.phase === 'created' || row.phase === 'queued' || row.phase === 'running';
  const body: Record<string, unknown> = { id: row.task_id, status: row.status, model: row.model, created_at: row.created_at, updated_at: row.updated_at, ...row.params };
  if (row.phase === 'succeeded') {
    for (const field of ['duration', 'content', 'framespersecond', 'usage', 'video_url', 'expires_at', 'duration_sec', 'output_files'])
      if (result[field] !== undefined) body[field] = result[field];
  }
  if (inFlight && row.progress !== null) body.progress = row.progress;
  if (!inFlight && row.phase !== 'succeeded') body.error = { code: row.error_code ?? 'task_failed', message: row.error_message ?? '' };
  return body;
}

/** The model a body names, before its kind's schema is known. */
const NamesModel = z.looseObject({ model: z.string().min(1) });

/**
 * Whether this key may receive the stored answer of this request (an Idempotency-Key replay): the checks
 * of the key a new call would meet (its allow-list, its spend cap for the same reservation).
 */
function mayReplay(deps: VideoDeps, request: FastifyRequest): GatewayError | null {
  const named = NamesModel.safeParse(request.body ?? {});
  if (!named.success) return null; // never stored: only successes are
  const caller = request.caller!;
  const asAnswered = (error: GatewayError | null) => (error && followsRuleEight(deps.registry, named.data.model) ? digitalHumanError(error) : error);
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, named.data.model);
  if ('code' in model) return asAnswered(replayRefusal(caller, model, () => 0n));
  const parsed = videoSkuOf(model).schema.safeParse(request.body);
  if (!parsed.success) return null;
  return asAnswered(replayRefusal(caller, model, (m) => videoSkuOf(m).reservation(parsed.data, m)));
}

/**
 * Whether a submission naming this model answers by Errors rule 8 (the digital-human list: 404
 * `model_not_found`, 403 `model_not_allowed`) rather than the main table: every SKU kind but `standard`
 * (digital humans, smart clip). An id the registry does not know is judged by its prefix (`dh-`, `clip-`).
 */
export function followsRuleEight(registry: ModelRegistry, id: string): boolean {
  const model = registry.resolve(id);
  if (model) return videoKindOf(model) !== 'standard';
  return /^(dh|clip)-/i.test(id);
}

async function submitVideo(deps: VideoDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const named = NamesModel.safeParse(request.body ?? {});
  const statuses = named.success && followsRuleEight(deps.registry, named.data.model) ? RULE_EIGHT_STATUS : {};
  const { facts, reject } = beginCall(deps.ledger, deps.now, request, 'videos.generations', 'second', statuses);
  if (!named.success) return reject('invalid_request', zodMessage(named.error));
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, named.data.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  // The model's kind of SKU decides the body's schema and rules.
  const sku = videoSkuOf(model);
  const parsed = sku.schema.safeParse(request.body);
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const prepared = await sku.prepare(parsed.data, model, { accountId: caller.accountId, mediaProbe: deps.mediaProbe, tasks: deps.tasks, registry: deps.registry, clipTemplates: deps.clipTemplates });
  if ('invalid' in prepared) return reject('invalid_request', prepared.invalid);
  const routes = model.kind === 'video' ? deps.router.scoped(callerGroup(caller)).routes(model.id, 'videos', prepared.channels) : [];
  if (routes.length === 0) {
    // A reference (an avatar, a cloned voice) held by an upstream with no video channel for this model.
    const elsewhere = prepared.channels !== undefined && model.kind === 'video' && deps.router.hasRoute(model.id, 'videos');
    return reject('no_channel_available', elsewhere ? `The model \`${model.id}\` has no channel on the upstream that holds this call's avatar or voice.` : `The model \`${model.id}\` has no channel for video generation.`);
  }
  const submitted = await submitUpstreamTask(deps, {
    facts,
    family: 'video',
    model,
    routes,
    reserved: prepared.reserved,
    billing: prepared.billing,
    basis: prepared.basis,
    params: prepared.params,
    fields: prepared.fields,
    lifetimeS: prepared.lifetimeS,
    reject,
  });
  if (!submitted.ok) return sendRefused(reply, submitted.answer);
  return reply.code(200).send(submittedBody(submitted.state));
}
