import type { FastifyInstance } from 'fastify';
import type { ModelRegistry } from '../../config/registry';
import type { ModelConfig } from '../../config/schema';
import { discountsOf } from '../../upstream/pricing';

function discountField(registry: ModelRegistry, model: ModelConfig) {
  const discounts = discountsOf(model, registry.config.discounts);
  return discounts.length > 0 ? { discounts } : {};
}

function publicEntry(registry: ModelRegistry, model: ModelConfig) {
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
    app.get('/v1/models', { config: { auth: 'key', free: true, headerKeyOnly: true } }, async (request) => {
      const allowList = request.caller!.key.settings.allowed_models;
      return {
        object: 'list',
        data: registry.models
          .filter((m) => registry.allows(allowList, m.id))
          .map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.owned_by })),
      };
    });

    app.get<{ Querystring: { id?: string } }>('/api/v1/models/public', { config: { auth: 'none' } }, async (request) => {
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
