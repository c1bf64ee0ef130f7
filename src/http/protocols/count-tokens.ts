import type { FastifyRequest } from 'fastify';
import type { ModelRegistry } from '../../config/registry';
import type { ProtocolAdapter } from '../../upstream/contract';
import { estimateUsage } from '../../upstream/pricing';
import { callableModel } from '../billable-call';
import { GatewayError } from '../errors';

/**
 * A prompt's token count, estimated locally as the pre-charge estimates it (about 4 bytes of the prompt a
 * token, docs/channels.md): Anthropic's `POST /v1/messages/count_tokens` and Gemini's `:countTokens`. Free,
 * no upstream call, no call-log row. The body is the protocol's own request (`max_tokens` not needed).
 */
export function countPromptTokens(registry: ModelRegistry, adapter: ProtocolAdapter, request: FastifyRequest, params: { model?: string } = {}): number {
  const raw = request.body;
  // Gemini's countTokens may wrap the request: `{generateContentRequest: {...}}`.
  const inner = (raw as { generateContentRequest?: unknown } | null)?.generateContentRequest ?? raw;
  const body = inner !== null && typeof inner === 'object' && !Array.isArray(inner) && adapter.protocol === 'messages' ? { max_tokens: 1, ...inner } : inner;
  const info = adapter.inspect(body, params);
  if ('invalid' in info) throw new GatewayError('invalid_request', info.invalid);
  const model = callableModel(registry, request.caller!.key.settings.allowed_models, info.model);
  if ('code' in model) throw new GatewayError(model.code, model.message);
  return estimateUsage(model, info.promptDocument, 1).promptTokens;
}
