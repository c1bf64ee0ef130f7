import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ModelRegistry } from '../../config/registry';
import type { ModelConfig, VideoRules } from '../../config/schema';
import type { TaskBilling } from '../../events/catalog';
import { countQuery } from '../intake/numbers';
import { parseUsd } from '../../money/usd';
import type { TaskQueries, TaskRow } from '../../projections/tasks/queries';
import { zodMessage } from '../../upstream/protocols/chat-completions';
import type { Router } from '../../upstream/routing';
import { beginCall, callableModel, replayRefusal } from '../billable-call';
import type { GatewayError } from '../errors';
import type { RouteDoc } from '../openapi/route-doc';
import { sendRefused, submittedBody, submitUpstreamTask, type TaskSubmitDeps } from './task-submit';
import { LIST_LIMIT, MEDIA_READ, MEDIA_ROUTE, statusesOf, statusQueryDoc, TaskIdParam, taskNotFound } from './task-views';

export interface VideoDeps extends TaskSubmitDeps {
  readonly registry: ModelRegistry;
  readonly router: Router;
  readonly queries: TaskQueries;
}

/** Without `duration` the reservation counts this many seconds (the spec's 12 s). */
export const DEFAULT_VIDEO_SECONDS = 12;
/** A token-billed task (a reference video) reserves its duration plus this many seconds. */
export const TOKEN_BILLING_EXTRA_SECONDS = 30;
/** How long a video task may run before the gateway gives up on it, unless `execution_expires_after` says. */
export const VIDEO_LIFETIME_S = 2 * 3600;
const LIFETIME_BOUNDS_S = { min: 3600, max: 48 * 3600 };
export const MAX_REFERENCE_IMAGES = 10;
/** The spec's fields echoed by polls when sent (the sentinels `seed: -1` and `ratio: adaptive` are not). */
const ECHOED = ['ratio', 'resolution', 'frames', 'seed', 'generate_audio', 'output_format', 'service_tier', 'safety_identifier', 'execution_expires_after', 'draft'] as const;

const Url = z.string().min(1).max(2_000_000);
const IMAGE_ROLES = ['first_frame', 'last_frame', 'reference_image'] as const;
const ContentItem = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text'), text: z.string().min(1) }),
  z.looseObject({ type: z.literal('image_url'), image_url: z.looseObject({ url: Url }), role: z.enum(IMAGE_ROLES).optional() }),
  z.looseObject({ type: z.literal('video_url'), video_url: z.looseObject({ url: Url }), role: z.literal('reference_video').optional() }),
  z.looseObject({ type: z.literal('audio_url'), audio_url: z.looseObject({ url: Url }), role: z.literal('reference_audio').optional() }),
]);

const VideoBody = z.looseObject({
  model: z.string().min(1),
  content: z.array(ContentItem).min(1).max(64),
  duration: z.number().positive().max(3600).optional(),
  ratio: z.string().min(1).max(32).optional(),
  resolution: z.string().min(1).max(32).optional(),
  watermark: z.boolean().optional(),
  return_last_frame: z.boolean().optional(),
  seed: z.number().int().min(-1).max(4_294_967_295).optional(),
  frames: z.number().int().positive().max(100_000).optional(),
  generate_audio: z.boolean().optional(),
  output_format: z.string().min(1).max(32).optional(),
  service_tier: z.string().min(1).max(32).optional(),
  safety_identifier: z.string().min(1).max(256).optional(),
  execution_expires_after: z.number().int().positive().optional(),
  draft: z.boolean().optional(),
  camera_fixed: z.boolean().optional(),
  video_mode: z.string().min(1).max(32).optional(),
  portrait_auth: z.boolean().optional(),
});
type VideoBody = z.output<typeof VideoBody>;

const ListQuery = z.looseObject({
  limit: countQuery(1, LIST_LIMIT.max).describe(`Tasks per page (default ${LIST_LIMIT.default}; above ${LIST_LIMIT.max} is ${LIST_LIMIT.max}).`),
  status: z.string().max(200).optional().describe(statusQueryDoc('video')),
});

const DOCS: Record<'create' | 'get' | 'list', RouteDoc> = {
  create: {
    operationId: 'createVideo',
    summary: 'Submit a video task',
    description:
      'Reserves the worst case (the per-second price of the resolution tier × `duration`, 12 s when absent; a token-billed reference video: × (duration + 30 s)) and submits the task upstream (60 s). Settled on the delivered seconds (or tokens), refunded in full on failure, expiry or cancellation.',
    tags: ['media'],
    body: { json: VideoBody },
    responses: { 200: { description: '`{id, status: queued, model, created_at}`.' } },
    errors: { 502: 'No channel could be reached: `upstream_unreachable`.', 503: 'The model has no video channel: `no_channel_available`.', 504: 'The upstream did not accept the task within 60 s: `upstream_timeout`.' },
  },
  get: {
    operationId: 'getVideo',
    summary: 'Poll a video task',
    tags: ['media'],
    params: { id: TaskIdParam },
    responses: { 200: { description: 'The video task: the spec\'s fields, each when it applies.' } },
    errors: { 404: 'No such task for this account: `not_found`.' },
  },
  list: {
    operationId: 'listVideos',
    summary: "The account's video tasks, newest first",
    tags: ['media'],
    query: ListQuery,
    responses: { 200: { description: '`{data: [video task]}`.' } },
  },
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
          callLog: { endpoint: 'videos.generations', unitType: 'second' },
          openapi: DOCS.create,
        },
      },
      (request, reply) => submitVideo(deps, request, reply),
    );
    app.get<{ Params: { id: string } }>('/v1/videos/generations/:id', { config: { ...MEDIA_READ, openapi: DOCS.get } }, async (request) => {
      const row = await deps.queries.get(request.caller!.accountId, 'video', request.params.id);
      if (!row) throw taskNotFound(request.params.id);
      return videoTaskBody(row);
    });
    app.get<{ Querystring: z.output<typeof ListQuery> }>('/v1/videos/generations', { config: { ...MEDIA_READ, openapi: DOCS.list } }, async (request) => {
      const statuses = statusesOf('video', request.query.status);
      const { rows } = await deps.queries.list({ accountId: request.caller!.accountId, family: 'video', statuses, limit: request.query.limit ?? LIST_LIMIT.default });
      return { data: rows.map(videoTaskBody) };
    });
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

interface VideoPlan {
  readonly reserved: bigint;
  readonly billing: TaskBilling;
  readonly basis: number;
}

/** Validation beyond the schema: the spec's content rules and the SKU's own. A message means a 400. */
function checkVideo(body: VideoBody, model: ModelConfig): string | null {
  const texts = body.content.filter((c) => c.type === 'text');
  if (texts.length !== 1) return `content: exactly one {type: "text", text} item is required (got ${texts.length})`;
  const images = body.content.filter((c) => c.type === 'image_url');
  if (images.filter((c) => c.role === 'reference_image').length > MAX_REFERENCE_IMAGES) return `content: at most ${MAX_REFERENCE_IMAGES} items with role reference_image`;
  for (const item of body.content) {
    if (item.type === 'image_url') {
      const url = item.image_url.url;
      const web = /^https?:\/\//i.test(url);
      // A real person's likeness goes by public link only, for the upstream's audit trail.
      if (body.portrait_auth === true && !web) return 'content: with portrait_auth, reference images of a real person must be public http(s) URLs, not base64 or data URIs';
      if (!web && !/^data:image\/[\w.+-]+;base64,/i.test(url)) return 'content: an image_url must be an http(s) URL or a data:image/...;base64 URI';
    }
    if (item.type === 'video_url' && !/^https?:\/\//i.test(item.video_url.url)) return 'content: a video_url must be a public http(s) URL';
    if (item.type === 'audio_url' && !/^https?:\/\//i.test(item.audio_url.url)) return 'content: an audio_url must be a public http(s) URL';
  }
  const rules: VideoRules | undefined = model.video;
  if (rules?.resolution_required && body.resolution === undefined) return `resolution: the model ${model.id} requires one of ${(rules.resolutions ?? []).join(', ') || 'its resolutions'}`;
  if (rules?.resolutions && body.resolution !== undefined && !rules.resolutions.includes(body.resolution))
    return `resolution: the model ${model.id} takes ${rules.resolutions.join(', ')}; got "${body.resolution}"`;
  const tiers = model.price.per_second;
  if (tiers !== undefined && typeof tiers !== 'string' && body.resolution !== undefined && tiers[body.resolution] === undefined)
    return `resolution: the model ${model.id} is priced for ${Object.keys(tiers).join(', ')}; got "${body.resolution}"`;
  const hasVideo = body.content.some((c) => c.type === 'video_url');
  if (body.video_mode !== undefined) {
    if (!rules?.video_mode) return `video_mode: the model ${model.id} does not take video_mode`;
    if (!hasVideo) return 'video_mode: needs a reference video (a content item of type video_url)';
    if (body.video_mode === 'extend' && body.duration !== undefined && (body.duration < 2 || body.duration > 10)) return 'duration: extending a video (video_mode extend) adds 2 to 10 seconds';
  }
  if (rules?.token_billing && hasVideo && body.resolution === undefined) return `resolution: required when the content of a ${model.id} task has a video_url item (it is billed per token)`;
  return null;
}

/** The per-second price of the call's tier: the sent resolution, else the model's default, else the dearest tier. */
function perSecond(model: ModelConfig, resolution: string | undefined): bigint {
  const tiers = model.price.per_second;
  if (tiers === undefined) return 0n;
  if (typeof tiers === 'string') return parseUsd(tiers);
  const tier = resolution ?? model.video?.default_resolution;
  if (tier !== undefined && tiers[tier] !== undefined) return parseUsd(tiers[tier]);
  return Object.values(tiers).reduce((max, price) => (parseUsd(price) > max ? parseUsd(price) : max), 0n);
}

/** The reservation and the billing: per delivered second, or per token for a reference video in the token-billed family. */
export function planVideo(body: VideoBody, model: ModelConfig): VideoPlan {
  const price = perSecond(model, body.resolution);
  const seconds = body.duration ?? DEFAULT_VIDEO_SECONDS;
  if (model.video?.token_billing && body.content.some((c) => c.type === 'video_url')) {
    const perMillion = parseUsd(model.price.per_1m_completion_tokens ?? '0');
    const reserved = (price * BigInt(Math.round((seconds + TOKEN_BILLING_EXTRA_SECONDS) * 1000)) + 999n) / 1000n;
    // The tokens the hold buys: what a task without usage is billed.
    const basis = perMillion === 0n ? 0 : Number((reserved * 1_000_000n) / perMillion);
    return { reserved, billing: { unit: 'token', price: perMillion, per: 1_000_000, cap: true }, basis };
  }
  const basis = Math.round(seconds * 1000);
  // Settled on the delivered length; without a duration the spec lets it pass the 12 s reservation.
  return { reserved: (price * BigInt(basis) + 999n) / 1000n, billing: { unit: 'millisecond', price, per: 1000, cap: body.duration !== undefined }, basis };
}

function echoed(body: VideoBody): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const field of ECHOED) {
    const value = body[field];
    if (value === undefined) continue;
    if (field === 'seed' && value === -1) continue;
    if (field === 'ratio' && value === 'adaptive') continue;
    params[field] = value;
  }
  return params;
}

function lifetimeOf(body: VideoBody): number {
  const asked = body.execution_expires_after;
  if (asked === undefined) return VIDEO_LIFETIME_S;
  return Math.min(LIFETIME_BOUNDS_S.max, Math.max(LIFETIME_BOUNDS_S.min, asked));
}

/**
 * Whether this key may receive the stored answer of this request (an Idempotency-Key replay): the checks
 * of the key a new call would meet (its allow-list, its spend cap for the same reservation).
 */
function mayReplay(deps: VideoDeps, request: FastifyRequest): GatewayError | null {
  const parsed = VideoBody.safeParse(request.body ?? {});
  if (!parsed.success) return null; // never stored: only successes are
  const caller = request.caller!;
  return replayRefusal(caller, callableModel(deps.registry, caller.key.settings.allowed_models, parsed.data.model), (model) => planVideo(parsed.data, model).reserved);
}

async function submitVideo(deps: VideoDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const { facts, reject } = beginCall(deps.ledger, deps.now, request, 'videos.generations', 'second');
  const parsed = VideoBody.safeParse(request.body ?? {});
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const body = parsed.data;
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, body.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  const invalid = checkVideo(body, model);
  if (invalid) return reject('invalid_request', invalid);
  const routes = model.kind === 'video' ? deps.router.routes(model.id, 'videos') : [];
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for video generation.`);
  const plan = planVideo(body, model);
  const { model: _model, ...fields } = body;
  const submitted = await submitUpstreamTask(deps, {
    facts,
    family: 'video',
    model,
    routes,
    reserved: plan.reserved,
    billing: plan.billing,
    basis: plan.basis,
    params: echoed(body),
    fields,
    lifetimeS: lifetimeOf(body),
    reject,
  });
  if (!submitted.ok) return sendRefused(reply, submitted.answer);
  return reply.code(200).send(submittedBody(submitted.state));
}
