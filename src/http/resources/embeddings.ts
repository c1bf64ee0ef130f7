import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CALL_TEXT_LIMITS, clipText } from '../../projections/call-log/bounds';
import { GatewayError } from '../errors';
import type { RouteDoc } from '../openapi/route-doc';

// The spec's endpoint index: `POST /v1/embeddings` — "no model currently available" (the embedding SKU
// was withdrawn in 2026-07). The route exists so that a client learns that after authentication, as 404
// `model_not_found` in the chat shape, and never as "no route". An embedding model the catalogue still
// lists is not served either: no channel speaks the embeddings protocol.

const EmbeddingsBody = z.looseObject({
  model: z.string().optional().describe('Any id: no embedding model is served, so every call is 404 `model_not_found`.'),
  input: z.unknown().optional(),
});

const DOC: RouteDoc = {
  operationId: 'createEmbedding',
  summary: 'Embeddings: not served (no embedding model is available)',
  description: 'Authenticated like every call (401 `invalid_api_key`), then 404 `model_not_found` whatever the model, an embedding model of the catalogue included. Nothing is billed.',
  tags: ['models'],
  body: { json: EmbeddingsBody },
  responses: {},
  errors: { 404: 'Always, after authentication: `model_not_found` (embeddings are not served).' },
};

/** The spec's 404 (the endpoint index's status, not the error table's 400). */
const NOT_SERVED_STATUS = 404;

export function embeddingsNotServed(body: unknown): GatewayError {
  const model = (body as { model?: unknown } | null)?.model;
  const named = typeof model === 'string' && model.length > 0 ? `The model \`${clipText(model, CALL_TEXT_LIMITS.model)}\` does not exist or you do not have access to it. ` : '';
  return new GatewayError('model_not_found', `${named}Embeddings are not served: no embedding model is available.`, {}, NOT_SERVED_STATUS);
}

/** `POST /v1/embeddings`. */
export async function embeddingsRoutes(app: FastifyInstance): Promise<void> {
  app.post('/v1/embeddings', { config: { auth: 'key', shape: 'chat', openapi: DOC } }, async (request) => {
    throw embeddingsNotServed(request.body);
  });
}
