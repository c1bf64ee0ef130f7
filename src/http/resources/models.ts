import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ModelRegistry } from '../../config/registry';
import type { ModelConfig } from '../../config/schema';
import { DEFAULT_CACHE_WRITE_1H_MULTIPLIER, discountsOf } from '../../upstream/pricing';
import type { Model, ModelList, PublicModels } from '../openapi/answers/chat';
import type { RouteDoc } from '../openapi/route-doc';
import { GatewayError } from '../errors';

const MODELS_DOC: RouteDoc = {
  operationId: 'listModels',
  summary: 'The models this key may call',
  description: 'Takes the key only as `x-api-key` or `Authorization: Bearer` (`?key=` gives 401). Free; does not check the balance.',
  tags: ['models'],
  responses: { 200: { description: '`{object: list, data: [{id, object: model, created, owned_by}]}`.' } },
};

const MODEL_DOC: RouteDoc = {
  operationId: 'retrieveModel',
  summary: 'One model this key may call, by id or alias',
  description: 'An alias answers with its canonical entry. Takes the key only as `x-api-key` or `Authorization: Bearer`. Free.',
  tags: ['models'],
  responses: { 200: { description: '`{id, object: model, created, owned_by}`.' } },
  errors: { 404: 'No such model, or the key may not call it: `not_found`.' },
};

const PublicQuery = z.looseObject({ id: z.string().optional().describe('One model by id or alias (its canonical entry); unknown gives an empty list.') });

const PUBLIC_DOC: RouteDoc = {
  operationId: 'listPublicModels',
  summary: 'The public catalogue with prices and capabilities (no authentication)',
  tags: ['models'],
  query: PublicQuery,
  responses: { 200: { description: '`{models: [...]}`: prices as USD decimal strings, `callable`, `endpoint_type`, `supported_protocols`.' } },
};

/** The 1-hour cache-write multiplier billing uses: the model's own, else the vendor's 2× on a model that charges writes. */
function cacheWrite1hField(model: ModelConfig): { cache_write_1h_multiplier?: string } {
  const oneHour = model.cache_write_1h_multiplier ?? (model.cache_write_multiplier ? DEFAULT_CACHE_WRITE_1H_MULTIPLIER : undefined);
  return oneHour ? { cache_write_1h_multiplier: oneHour } : {};
}

function discountField(registry: ModelRegistry, model: ModelConfig) {
  const discounts = discountsOf(model, registry.config.discounts);
  return discounts.length > 0 ? { discounts } : {};
}

function publicEntry(registry: ModelRegistry, model: ModelConfig): z.output<typeof PublicModels>['models'][number] {
  return {
    id: model.id,
    object: 'model',
    owned_by: model.owned_by,
    kind: model.kind,
    aliases: model.aliases,
    callable: model.callable,
    endpoint_type: model.endpoint_type,
    capabilities: model.capabilities,
    // USD as exact decimal strings: per 1M tokens for text, per unit for media.
    price: model.price,
    ...(model.cache_write_multiplier ? { cache_write_multiplier: model.cache_write_multiplier } : {}),
    // The 1-hour price in force, its default included, wherever writes are priced.
    ...cacheWrite1hField(model),
    ...(model.long_context ? { long_context: model.long_context } : {}),
    // Listed prices stay undiscounted (spec, Billing flow 5); the promotions that apply are shown beside them.
    ...discountField(registry, model),
    ...(model.fixed_grid ? { fixed_grid: model.fixed_grid } : {}),
    context_window: model.context_window ?? null,
    default_max_tokens: model.default_max_tokens ?? null,
    supported_protocols: model.callable ? registry.supportedProtocols(model.id) : [],
  };
}

export function modelRoutes(registry: ModelRegistry) {
  return async (app: FastifyInstance) => {
    app.get('/v1/models', { config: { auth: 'key', free: true, headerKeyOnly: true, openapi: MODELS_DOC } }, async (request): Promise<z.output<typeof ModelList>> => {
      const allowList = request.caller!.key.settings.allowed_models;
      return {
        object: 'list',
        data: registry.models
          .filter((m) => registry.allows(allowList, m.id))
          .map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.owned_by })),
      };
    });

    app.get<{ Params: { id: string } }>('/v1/models/:id', { config: { auth: 'key', free: true, headerKeyOnly: true, openapi: MODEL_DOC } }, async (request): Promise<z.output<typeof Model>> => {
      const model = registry.resolve(request.params.id);
      if (!model || !registry.allows(request.caller!.key.settings.allowed_models, model.id))
        throw new GatewayError('not_found', `The model \`${request.params.id}\` does not exist or this key may not use it.`);
      return { id: model.id, object: 'model', created: 0, owned_by: model.owned_by };
    });

    app.get<{ Querystring: z.output<typeof PublicQuery> }>('/api/v1/models/public', { config: { auth: 'none', openapi: PUBLIC_DOC } }, async (request) => {
      const wanted = request.query.id;
      if (wanted !== undefined) {
        // An alias resolves to its canonical entry.
        const model = registry.resolve(wanted);
        return { models: model ? [publicEntry(registry, model)] : [] };
      }
      return { models: registry.models.map((m) => publicEntry(registry, m)) };
    });
  };
}
