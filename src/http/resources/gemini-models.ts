import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ModelRegistry } from '../../config/registry';
import type { ModelConfig } from '../../config/schema';
import { GatewayError } from '../errors';
import type { RouteDoc } from '../openapi/route-doc';

// The generate-content SDK's model routes (`ai.models.list()` / `ai.models.get()` of @google/genai):
// `GET /v1beta/models` and `GET /v1beta/models/{model}` in the vendor's Model shape, from the same
// catalogue as `GET /v1/models`, the key's allow-list applied. Free, like the other model lists.

/** The vendor's default and largest page. */
const PAGE = { default: 50, max: 1000 } as const;

/** What the gateway serves a model with on this protocol: its generate-content calls and the free count. */
const GENERATION_METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'] as const;

const ListQuery = z.looseObject({
  pageSize: z
    .string()
    .regex(/^\d{0,9}$/, 'must be a whole number')
    .optional()
    .transform((text) => (text === undefined || text === '' ? PAGE.default : Math.min(Math.max(Number(text), 1), PAGE.max)))
    .describe(`Models per page, 1-${PAGE.max} (default ${PAGE.default}; 0 is the default, more is ${PAGE.max}).`),
  pageToken: z
    .string()
    .regex(/^\d{0,9}$/, 'is not a page token this API returned')
    .optional()
    .describe('The `nextPageToken` of the previous page.'),
});

const ModelParams = { model: z.string().min(1).describe('A model id or alias (a `models/` prefix is dropped).') };

const LIST_DOC: RouteDoc = {
  operationId: 'listGenerateContentModels',
  summary: 'The models this key may call, in the generate-content shape',
  description:
    'What `ai.models.list()` of the generate-content SDK reads: `{models: [{name: "models/{id}", baseModelId, displayName, description, inputTokenLimit?, outputTokenLimit?, supportedGenerationMethods}], nextPageToken?}`. The catalogue of `GET /v1/models` with the key\'s allow-list applied; `supportedGenerationMethods` is `generateContent`, `streamGenerateContent`, `countTokens` for a model this endpoint serves now, else empty. Free.',
  tags: ['models'],
  query: ListQuery,
  responses: { 200: { description: '`{models: [...], nextPageToken?}`.' } },
};

const GET_DOC: RouteDoc = {
  operationId: 'getGenerateContentModel',
  summary: 'One model this key may call, in the generate-content shape',
  description: 'What `ai.models.get()` of the generate-content SDK reads; an alias answers with its canonical entry. Free.',
  tags: ['models'],
  path: '/v1beta/models/{model}',
  params: ModelParams,
  responses: { 200: { description: '`{name: "models/{id}", baseModelId, displayName, description, inputTokenLimit?, outputTokenLimit?, supportedGenerationMethods}`.' } },
  errors: { 404: 'No such model, or the key may not call it: `NOT_FOUND`.' },
};

function geminiModel(registry: ModelRegistry, model: ModelConfig) {
  const served = model.callable && registry.supportedProtocols(model.id).includes('generate-content');
  return {
    name: `models/${model.id}`,
    baseModelId: model.id,
    displayName: model.id,
    description: `A ${model.kind} model (${model.owned_by}).`,
    ...(model.context_window !== undefined ? { inputTokenLimit: model.context_window } : {}),
    ...(model.default_max_tokens !== undefined ? { outputTokenLimit: model.default_max_tokens } : {}),
    supportedGenerationMethods: served ? [...GENERATION_METHODS] : [],
  };
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export function geminiModelRoutes(registry: ModelRegistry) {
  return async (app: FastifyInstance) => {
    const config = { auth: 'key', free: true, shape: 'generate' } as const;

    app.get<{ Querystring: z.output<typeof ListQuery> }>('/v1beta/models', { config: { ...config, openapi: LIST_DOC } }, async (request) => {
      const allowList = request.caller!.key.settings.allowed_models;
      const models = registry.models.filter((m) => registry.allows(allowList, m.id));
      const start = Number(request.query.pageToken || 0);
      const end = start + request.query.pageSize;
      return {
        models: models.slice(start, end).map((m) => geminiModel(registry, m)),
        ...(end < models.length ? { nextPageToken: String(end) } : {}),
      };
    });

    // A wildcard: catalogue ids may hold a `/`.
    app.get<{ Params: { '*': string } }>('/v1beta/models/*', { config: { ...config, openapi: GET_DOC } }, async (request) => {
      const id = decoded(request.params['*']).replace(/^models\//, '');
      const model = registry.resolve(id);
      if (!model || !registry.allows(request.caller!.key.settings.allowed_models, model.id))
        throw new GatewayError('not_found', `models/${id} is not found, or this key may not use it. Call GET /v1beta/models for the models it may use.`);
      return geminiModel(registry, model);
    });
  };
}
