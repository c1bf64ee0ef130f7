import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { TaskState } from '../../../commands/task/decider';
import { FAMILIES } from '../../../commands/task/families';
import type { ModelRegistry } from '../../../config/registry';
import { zodMessage } from '../../../config/zod-message';
import { parseSongId, songId, type Song } from '../../../tasks/families/music';
import { callableModel } from '../../billable-call';
import { GatewayError, type ErrorCode } from '../../errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { echoed, MUSIC_LIFETIME_S, SongFields, type MusicDeps } from './music';
import { perCall, perCallPlan, perCallReplayRefusal } from '../tasks/per-call';
import { sendRefused, submittedBody, submitUpstreamTask } from '../tasks/task-submit';
import { MEDIA_ROUTE, TASK_ID, taskNotFound } from '../tasks/task-views';
import { callerGroup } from '../../../channels/groups';

/** The follow-ups of a song, after Suno-style APIs: lyrics from a prompt; extend, cover (two new songs);
 * stems (vocals and instrumental), wav, video (files) of a song already made. */
export const MUSIC_ACTIONS = ['lyrics', 'extend', 'cover', 'stems', 'wav', 'video'] as const;
type MusicAction = (typeof MUSIC_ACTIONS)[number];

/** Gateway task ids are UUIDs: anything else names no task (and no stream is read for it). */

const AssetBody = z
  .looseObject({
    model: z.string().min(1).optional().describe("A music model; default: the source task's model (lyrics without a source: the first music model the key may use)."),
    action: z.enum(MUSIC_ACTIONS),
    task_id: z.string().min(1).max(200).optional().describe('The gateway id of the music task whose song this works on (a generation, or an extend or cover).'),
    song_id: z.string().min(1).max(200).optional().describe('The song (`songs[].id` of a poll); enough on its own.'),
    song_index: z.number().int().min(0).max(99).optional().describe('The song by its place in `songs` (default 0), instead of `song_id`.'),
    ...SongFields,
  })
  // The gateway names the source upstream itself: a client's upstream reference would bypass the ownership check.
  .refine((b) => b.audio_id === undefined && b.audio_url === undefined, {
    message: 'the source song is named by task_id and song_id or song_index (a song of your own music task), not by audio_id or audio_url',
    path: ['audio_id'],
  });
type AssetBody = z.output<typeof AssetBody>;

const DOC: RouteDoc = {
  operationId: 'createMusicAsset',
  summary: 'Submit a music follow-up: lyrics, extend, cover, stems, wav or video',
  description:
    "A task of the music family on a song of the caller's own succeeded music task (`lyrics` needs only a `prompt`). Billed one call at the `per_call` price of `model` (default: the source task's model), reserved at submit, refunded in full on failure. Polled at `GET /v1/music/generations/{id}` and listed with the music tasks; its polls carry `action`.",
  tags: ['media'],
  body: { json: AssetBody },
  responses: { 200: { description: '`{id, status: processing, model, created_at, action}`.' } },
  errors: {
    404: 'The source task is not one of this account\'s music tasks: `not_found`.',
    502: 'No channel could be reached: `upstream_unreachable`.',
    503: 'The model has no music channel (for a follow-up: none on the channel that made the source song): `no_channel_available`.',
    504: 'The upstream did not accept the task within 60 s: `upstream_timeout`.',
  },
};

export function musicAssetRoutes(deps: MusicDeps) {
  return async (app: FastifyInstance) => {
    app.post(
      '/v1/music/assets',
      {
        config: {
          ...MEDIA_ROUTE,
          idempotent: true,
          mayReplay: (request: FastifyRequest) => replayRefusal(deps, request),
          callLog: { endpoint: 'music.assets', unitType: 'call' },
          openapi: DOC,
        },
      },
      (request, reply) => submitAsset(deps, request, reply),
    );
  };
}

/** The song a follow-up works on, and where the upstream knows it. */
interface Source {
  readonly task: TaskState;
  readonly index: number;
  /** The upstream's id of the song, when its result named one. */
  readonly upstreamSongId: string | null;
}


type Refusal = { readonly code: ErrorCode; readonly message: string };

/** Rules of the body beyond its schema, per action. A message means a 400. */
function checkAsset(body: AssetBody): string | null {
  const named = body.task_id !== undefined || body.song_id !== undefined || body.song_index !== undefined;
  if (body.action === 'lyrics') {
    if (!(typeof body.prompt === 'string' && body.prompt.trim() !== '')) return 'prompt: lyrics are written from a prompt (a non-empty string)';
    if (named) return 'lyrics: takes no source song (task_id, song_id, song_index)';
    return null;
  }
  if (body.task_id === undefined && body.song_id === undefined) return `task_id: ${body.action} works on a song: name its music task (task_id) or the song (song_id)`;
  if (body.song_id !== undefined && body.song_index !== undefined) return 'song_index: name the song by song_id or song_index, not both';
  return null;
}

/**
 * The caller's song the follow-up works on, read from the task's stream (not a view that may lag): an
 * unknown, foreign or invisible task is a 404 (rule 7 of the spec's errors); one that has no songs (not
 * succeeded, or a follow-up that made files or lyrics) or no such song is the caller's 400.
 */
async function sourceOf(deps: MusicDeps, accountId: string, body: AssetBody): Promise<Source | Refusal | null> {
  if (body.action === 'lyrics') return null;
  const fromSong = body.song_id !== undefined ? parseSongId(body.song_id) : null;
  if (body.song_id !== undefined && !fromSong) return { code: 'not_found', message: `No song with id ${JSON.stringify(body.song_id)} exists for this account.` };
  if (fromSong && body.task_id !== undefined && fromSong.taskId !== body.task_id)
    return { code: 'invalid_request', message: `song_id: the song ${body.song_id} is not one of the task ${body.task_id}` };
  const taskId = body.task_id ?? fromSong!.taskId;
  const notFound = taskNotFound(taskId);
  if (!TASK_ID.test(taskId)) return { code: 'not_found', message: notFound.message };
  const task = await deps.tasks.state(taskId);
  if (task.phase === 'none' || task.accountId !== accountId || !task.visible || task.family !== 'music') return { code: 'not_found', message: notFound.message };
  if (task.phase !== 'succeeded' || !task.upstream)
    return { code: 'invalid_request', message: `task_id: the music task ${taskId} has not succeeded (status ${FAMILIES.music.statusOf(task.phase)}); a follow-up works on a song already made` };
  const songs = Array.isArray(task.result?.songs) ? (task.result.songs as Song[]) : [];
  if (songs.length === 0) return { code: 'invalid_request', message: `task_id: the music task ${taskId} made no songs (it is a ${String(task.params.action)} follow-up)` };
  const index = fromSong?.index ?? body.song_index ?? 0;
  if (index >= songs.length || songs[index]?.id !== songId(taskId, index))
    return { code: 'invalid_request', message: `${body.song_id !== undefined ? 'song_id' : 'song_index'}: the music task ${taskId} has ${songs.length} songs (0 to ${songs.length - 1})` };
  const upstreamIds = task.result?.upstream_song_ids;
  const upstreamSongId = Array.isArray(upstreamIds) && typeof upstreamIds[index] === 'string' ? (upstreamIds[index] as string) : null;
  return { task, index, upstreamSongId };
}

/** The model a follow-up is billed and run on: named, else its source's, else the first music model the key may use. */
function modelIdOf(registry: ModelRegistry, allowList: readonly string[] | null, body: AssetBody, source: Source | null): string | null {
  if (body.model !== undefined) return body.model;
  if (source) return source.task.model;
  return registry.models.find((m) => m.kind === 'music' && m.callable && registry.allows(allowList, m.id))?.id ?? null;
}

async function replayRefusal(deps: MusicDeps, request: FastifyRequest): Promise<GatewayError | null> {
  const caller = request.caller!;
  const parsed = AssetBody.safeParse(request.body ?? {});
  if (!parsed.success || checkAsset(parsed.data)) return null; // never stored: only successes are
  const source = await sourceOf(deps, caller.accountId, parsed.data);
  if (source && 'code' in source) return new GatewayError(source.code, source.message);
  const modelId = modelIdOf(deps.registry, caller.key.settings.allowed_models, parsed.data, source);
  return modelId === null ? null : perCallReplayRefusal(deps.registry, request, modelId);
}

async function submitAsset(deps: MusicDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const caller = request.caller!;
  const { facts, reject } = perCall(deps, request, 'music.assets');
  const parsed = AssetBody.safeParse(request.body ?? {});
  if (!parsed.success) return reject('invalid_request', zodMessage(parsed.error));
  const body = parsed.data;
  const invalid = checkAsset(body);
  if (invalid) return reject('invalid_request', invalid);
  const source = await sourceOf(deps, caller.accountId, body);
  if (source && 'code' in source) return reject(source.code, source.message);

  const allowList = caller.key.settings.allowed_models;
  const modelId = modelIdOf(deps.registry, allowList, body, source);
  if (modelId === null) return reject('model_not_found', 'No music model is available to this API key: name one in `model`.');
  const model = callableModel(deps.registry, allowList, modelId);
  if ('code' in model) return reject(model.code, model.message);
  facts.model = model.id;
  // The upstream that made the song is the only one that knows its ids.
  const channelId = source?.task.upstream?.channelId;
  const routes = model.kind !== 'music' ? [] : deps.router.scoped(callerGroup(caller)).routes(model.id, 'music', channelId === undefined ? undefined : (channel) => channel.id === channelId);
  if (routes.length === 0)
    return reject(
      'no_channel_available',
      source ? `The model \`${model.id}\` has no channel on the upstream that made the source song; follow-ups run there.` : `The model \`${model.id}\` has no channel for music.`,
    );

  const { model: _model, task_id: _task, song_id: _song, song_index: _index, ...own } = body;
  const fields: Record<string, unknown> = {
    ...own,
    ...(source ? { task_id: source.task.upstream!.taskId, ...(source.upstreamSongId ? { audio_id: source.upstreamSongId } : {}) } : {}),
  };
  const params: Record<string, unknown> = {
    action: body.action,
    ...(source ? { source_task_id: source.task.taskId, source_song_id: songId(source.task.taskId, source.index) } : {}),
    ...echoed(body),
  };
  const submitted = await submitUpstreamTask(deps, {
    facts,
    family: 'music',
    model,
    routes,
    ...perCallPlan(model),
    params,
    fields,
    lifetimeS: MUSIC_LIFETIME_S,
    reject,
  });
  if (!submitted.ok) return sendRefused(reply, submitted.answer);
  return reply.code(200).send({ ...submittedBody(submitted.state), action: body.action satisfies MusicAction });
}
