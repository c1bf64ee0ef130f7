import { FAMILIES } from '../../../commands/task/families';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ModelRegistry } from '../../../config/registry';
import type { TaskQueries, TaskRow } from '../../../projections/tasks/queries';
import { zodMessage } from '../../../config/zod-message';
import type { Router } from '../../../channels/routing';
import { callableModel } from '../../billable-call';
import type { GatewayError } from '../../errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { perCall, perCallPlan, perCallReplayRefusal } from '../tasks/per-call';
import { sendRefused, submittedBody, submitUpstreamTask, type TaskSubmitDeps } from '../tasks/task-submit';
import { LIST_LIMIT, MEDIA_ROUTE } from '../tasks/task-views';
import { taskFamilyRoutes, type TaskFamilyView } from '../tasks/task-family-routes';
import { callerGroup } from '../../../channels/groups';

export interface MusicDeps extends TaskSubmitDeps {
  readonly registry: ModelRegistry;
  readonly router: Router;
  readonly queries: TaskQueries;
}

/** How long a music task (a generation or a follow-up) may run before the gateway gives up on it:
 * a song takes a few minutes upstream; an hour leaves room for a queue there. */
export const MUSIC_LIFETIME_S = 3600;

/** Suno-style bounds: a description or lyrics of a few thousand characters, a style of tags, a short title. */
export const MUSIC_TEXT_LIMITS = { prompt: 5000, lyrics: 5000, style: 1000, title: 200 } as const;

/** The client's fields every poll of the task repeats, only as sent (prompt and lyrics are not: they can be long). */
export const ECHOED = ['title', 'style', 'instrumental'] as const;

const nonBlank = (v: unknown) => typeof v === 'string' && v.trim() !== '';

/** The text fields a generation and a follow-up share. */
export const SongFields = {
  prompt: z.string().max(MUSIC_TEXT_LIMITS.prompt).optional().describe('What the song is about (a description), or, for `lyrics`, what to write about.'),
  lyrics: z.string().max(MUSIC_TEXT_LIMITS.lyrics).optional().describe('The words to sing (custom mode); absent: the upstream writes them.'),
  style: z.string().max(MUSIC_TEXT_LIMITS.style).optional().describe('Genre, mood, instruments (e.g. "lo-fi, mellow piano").'),
  title: z.string().max(MUSIC_TEXT_LIMITS.title).optional(),
  instrumental: z.boolean().optional().describe('true: no vocals.'),
};

const MusicBody = z
  .looseObject({ model: z.string().min(1), ...SongFields })
  .refine((b) => nonBlank(b.prompt) || nonBlank(b.lyrics), { message: 'a prompt or lyrics (a non-empty string) is required', path: ['prompt'] })
  // The upstream reads `action` as a follow-up: a generation that carried one would be billed as a song and make none.
  .refine((b) => b.action === undefined, { message: 'a generation takes no action: follow-ups (lyrics, extend, cover, stems, wav, video) go to POST /v1/music/assets', path: ['action'] });
type MusicBody = z.output<typeof MusicBody>;

const DOCS: Record<'create' | 'get' | 'list', RouteDoc> = {
  create: {
    operationId: 'createMusic',
    summary: 'Submit a music generation (two songs)',
    description:
      'Reserves the model\'s `per_call` price and submits the task upstream (60 s). Settled at that price when the songs are delivered, refunded in full on failure, expiry, cancellation or a result without songs. Fields other than `model` go upstream as sent.',
    tags: ['media'],
    body: { json: MusicBody },
    responses: { 200: { description: '`{id, status: processing, model, created_at}`.' } },
    errors: { 502: 'No channel could be reached: `upstream_unreachable`.', 503: 'The model has no music channel: `no_channel_available`.', 504: 'The upstream did not accept the task within 60 s: `upstream_timeout`.' },
  },
  get: {
    operationId: 'getMusic',
    summary: 'Poll a music task (a generation or a follow-up)',
    tags: ['media'],
    responses: {
      200: { description: 'The music task: `id`, `status`, `model`, `created_at`, `updated_at`, the echoed fields, `progress` (in flight), `songs` / `files` / `lyrics` and `expires_at` (succeeded), `error` (failed, expired, cancelled).' },
    },
    errors: { 404: 'No such task for this account: `not_found`.' },
  },
  list: {
    operationId: 'listMusic',
    summary: "The account's music tasks (generations and follow-ups), newest first",
    tags: ['media'],
    responses: { 200: { description: '`{data: [music task]}`.' } },
  },
};

/** Polls and the list of music tasks. */
const VIEW: TaskFamilyView = {
  family: 'music',
  body: (row) => musicTaskBody(row),
  get: { doc: DOCS.get },
  list: { doc: DOCS.list, params: ['limit', 'status'], limit: LIST_LIMIT },
};


export function musicRoutes(deps: MusicDeps) {
  return async (app: FastifyInstance) => {
    app.post(
      '/v1/music/generations',
      {
        config: {
          ...MEDIA_ROUTE,
          idempotent: true,
          mayReplay: (request: FastifyRequest) => replayRefusal(deps, request),
          callLog: { endpoint: 'music.generations', unitType: FAMILIES.music.unit },
          openapi: DOCS.create,
        },
      },
      (request, reply) => submitMusic(deps, request, reply),
    );
    taskFamilyRoutes(VIEW, deps.queries)(app);
  };
}

/** Each result object's fields in the order polls show them (the task views' jsonb keeps its own order). */
const RESULT_FIELDS: Readonly<Record<string, readonly string[] | null>> = {
  songs: ['id', 'audio_url', 'image_url', 'title', 'duration'],
  files: ['name', 'url', 'format'],
  lyrics: ['title', 'text'],
  expires_at: null,
};

function inOrder(value: unknown, fields: readonly string[]): unknown {
  const one = (item: Record<string, unknown>) => Object.fromEntries(fields.filter((f) => item[f] !== undefined).map((f) => [f, item[f]]));
  if (Array.isArray(value)) return value.map((item) => one(item as Record<string, unknown>));
  return typeof value === 'object' && value !== null ? one(value as Record<string, unknown>) : value;
}

/** The music task object: each field only when it applies. Generations and follow-ups share it; a follow-up carries `action`. */
export function musicTaskBody(row: TaskRow): Record<string, unknown> {
  const result = row.result ?? {};
  const inFlight = row.phase === 'created' || row.phase === 'queued' || row.phase === 'running';
  const body: Record<string, unknown> = { id: row.task_id, status: row.status, model: row.model, created_at: row.created_at, updated_at: row.updated_at, ...row.params };
  if (inFlight && row.progress !== null) body.progress = row.progress;
  if (row.phase === 'succeeded')
    for (const [field, order] of Object.entries(RESULT_FIELDS)) if (result[field] !== undefined) body[field] = order ? inOrder(result[field], order) : result[field];
  if (!inFlight && row.phase !== 'succeeded') body.error = { code: row.error_code ?? 'task_failed', message: row.error_message ?? '' };
  return body;
}

export function echoed(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const field of ECHOED) if (body[field] !== undefined) params[field] = body[field];
  return params;
}

function replayRefusal(deps: MusicDeps, request: FastifyRequest): GatewayError | null {
  const parsed = MusicBody.safeParse(request.body ?? {});
  if (!parsed.success) return null; // never stored: only successes are
  return perCallReplayRefusal(deps.registry, request, parsed.data.model);
}

async function submitMusic(deps: MusicDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const { facts, reject } = perCall(deps, request, 'music.generations');
  const parsed = MusicBody.safeParse(request.body ?? {});
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const body: MusicBody = parsed.data;
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, body.model);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  const routes = model.kind === 'music' ? deps.router.scoped(callerGroup(caller)).routes(model.id, 'music') : [];
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for music generation.`);
  const plan = perCallPlan(model);
  const { model: _model, ...fields } = body;
  const submitted = await submitUpstreamTask(deps, {
    facts,
    family: 'music',
    model,
    routes,
    ...plan,
    params: echoed(body),
    fields,
    lifetimeS: MUSIC_LIFETIME_S,
    reject,
  });
  if (!submitted.ok) return sendRefused(reply, submitted.answer);
  return reply.code(200).send(submittedBody(submitted.state));
}
