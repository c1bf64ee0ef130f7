import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { CLIP_SCENES, type ClipScene, type ClipTemplates, type TemplateLookup } from '../../../clip/templates';
import { tasksErrorMessage } from '../../../upstream/protocols/tasks';
import type { Failure } from '../../../upstream/upstream-call';
import { GatewayError, upstreamErrorBody } from '../../errors';
import { RULE_EIGHT_STATUS } from './digital-human-errors';
import type { RouteDoc } from '../../openapi/route-doc';
import { MEDIA_READ } from '../tasks/task-views';

// GET /v1/videos/clip-templates and /{id}: free reads of the upstream's templates, served from the
// gateway's 10-minute cache (src/clip/templates.ts), for keys that may call a smart-clip SKU.

const ListQuery = z.looseObject({
  scene: z.string().max(100).optional().describe(`One of ${CLIP_SCENES.join(', ')} (required).`),
});
const TemplateIdParam = z.string().min(1).max(200).describe('A template id from the list (a `style_id` of the clip SKUs).');

const DOCS: Record<'list' | 'get', RouteDoc> = {
  list: {
    operationId: 'listClipTemplates',
    summary: 'Smart-clip templates of a scene',
    description:
      'Free. `{templates: [{id, title, cover_url, has_title, has_persona}]}` as the upstream gives it, cached by the gateway for 10 minutes. The key must be allowed at least one `clip-*` model (else 403 `model_not_allowed`).',
    tags: ['media'],
    query: ListQuery,
    responses: { 200: { description: '`{templates: [{id, title, cover_url, has_title, has_persona}]}`.' } },
    errors: {
      403: 'The key may call no `clip-*` model: `model_not_allowed`.',
      502: 'The upstream could not be reached: `upstream_unreachable`.',
      503: 'No channel serves a clip model: `no_channel_available`.',
      504: 'The upstream did not answer in time: `upstream_timeout`.',
    },
  },
  get: {
    operationId: 'getClipTemplate',
    summary: 'One smart-clip template with its canvas and layers',
    description: 'Free; cached by the gateway for 10 minutes. The key must be allowed at least one `clip-*` model (else 403 `model_not_allowed`).',
    tags: ['media'],
    params: { id: TemplateIdParam },
    responses: { 200: { description: 'The template: `{id, title, cover_url, has_title, has_persona, canvas, layers, …}`.' } },
    errors: { 403: 'The key may call no `clip-*` model: `model_not_allowed`.', 404: 'No such template: `not_found`.' },
  },
};

export function clipTemplateRoutes(templates: ClipTemplates) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: z.output<typeof ListQuery> }>('/v1/videos/clip-templates', { config: { ...MEDIA_READ, openapi: DOCS.list } }, async (request, reply) => {
      const scene = request.query.scene;
      if (scene === undefined || !(CLIP_SCENES as readonly string[]).includes(scene))
        throw new GatewayError('invalid_request', `scene: must be one of ${CLIP_SCENES.join(', ')}; got ${scene === undefined ? 'none' : JSON.stringify(scene)}`);
      const lookup = await templates.list(channelsOf(templates, request), scene as ClipScene);
      return answer(reply, lookup, () => `No templates for scene ${scene}.`);
    });
    app.get<{ Params: { id: string } }>('/v1/videos/clip-templates/:id', { config: { ...MEDIA_READ, openapi: DOCS.get } }, async (request, reply) => {
      const id = request.params.id;
      const lookup = await templates.template(channelsOf(templates, request), id);
      return answer(reply, lookup, () => `No clip template with id ${JSON.stringify(id.slice(0, 200))}.`);
    });
  };
}

/** The channels to ask for this key: those of the clip models it may call (Errors, rule 8: 403 when none). */
function channelsOf(templates: ClipTemplates, request: FastifyRequest) {
  const models = templates.allowedClipModels(request.caller!.key.settings.allowed_models);
  if (models.length === 0) throw new GatewayError('model_not_allowed', 'This API key is not allowed to use any smart-clip (clip-*) model.', {}, RULE_EIGHT_STATUS.model_not_allowed);
  const channels = templates.channelsFor(models);
  if (channels.length === 0) throw new GatewayError('no_channel_available', 'No channel serves a smart-clip (clip-*) model.');
  return channels;
}

function answer<T>(reply: FastifyReply, lookup: TemplateLookup<T>, notFound: () => string): T | FastifyReply {
  if (lookup.kind === 'found') return lookup.value;
  if (lookup.kind === 'not_found') throw new GatewayError('not_found', notFound());
  return failed(reply, lookup.failure);
}

/** An upstream that did not answer: the gateway's own error; one that refused: its status and message (Errors, rule 5). */
function failed(reply: FastifyReply, failure: Failure) {
  switch (failure.kind) {
    case 'unreachable':
    case 'unreadable':
      throw new GatewayError('upstream_unreachable', failure.message);
    case 'timeout':
      throw new GatewayError('upstream_timeout', failure.message);
    case 'shutdown':
      throw new GatewayError('gateway_shutting_down', failure.message);
    case 'no_channel':
      throw new GatewayError('no_channel_available', failure.message);
    case 'status': {
      let message: string | null = null;
      try {
        message = tasksErrorMessage(JSON.parse(failure.body));
      } catch {
        message = null;
      }
      return reply.code(failure.status).type('application/json').send(upstreamErrorBody('chat', failure.status, message ?? (failure.body.slice(0, 500) || `upstream status ${failure.status}`)));
    }
  }
}
