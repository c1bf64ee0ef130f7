import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { generateContent } from '../../upstream/protocols/generate-content';
import { callerGroup } from '../../channels/groups';
import { channelDispatcher, shapedHeaders, shapedPath } from '../../upstream/shaping';
import type { ProtocolAdapter } from '../../upstream/contract';
import { ERROR_BODY_BYTES, textWithin } from '../../upstream/bounded-body';
import { tryJson } from '../../upstream/json';
import { estimateUsage } from '../../upstream/pricing';
import { chatProtocol, type TokenCount } from '../../upstream/protocols/registry';
import type { Route } from '../../channels/routing';
import { upstreamAgent, upstreamTarget } from '../../upstream/upstream-call';
import { callableModel } from '../billable-call';
import { GatewayError } from '../errors';
import { forwardedHeaders, type RelayDeps } from './relay';

/** What Gemini's `:countTokens` takes (what `countPromptTokens` reads): a `:generateContent` body, or one
 * wrapped in `generateContentRequest` as the SDK's `ai.models.countTokens()` sends it. */
export const GenerateCountTokensBody = z.union([generateContent.requestSchema, z.looseObject({ generateContentRequest: generateContent.requestSchema })]);

/** The most an upstream count may take before the local estimate answers instead. */
export const UPSTREAM_COUNT_TIMEOUT_MS = 10_000;

/**
 * A prompt's token count for Anthropic's `POST /v1/messages/count_tokens` and Gemini's `:countTokens`
 * (Claude Code asks on every turn). Asked of the upstream when a channel of the model, in the caller's
 * group and usable, speaks the same protocol (its own count endpoint, shaped like its calls); else, or when
 * that answer is not a count, estimated locally as the pre-charge estimates it (about 4 bytes of the prompt a
 * token, docs/channels.md). Free, no call-log row, and the channel's health is not told (a count is not a call).
 * The body is the protocol's own request (`max_tokens` not needed).
 */
export async function countPromptTokens(deps: Pick<RelayDeps, 'registry' | 'router' | 'dispatcher'>, adapter: ProtocolAdapter, request: FastifyRequest, params: { model?: string } = {}): Promise<number> {
  const raw = request.body;
  // Gemini's countTokens may wrap the request: `{generateContentRequest: {...}}`.
  const inner = (raw as { generateContentRequest?: unknown } | null)?.generateContentRequest ?? raw;
  const info = adapter.inspect(tokenCountOf(adapter).inspected(inner), params);
  if ('invalid' in info) throw new GatewayError('invalid_request', info.invalid);
  const model = callableModel(deps.registry, request.caller!.key.settings.allowed_models, info.model);
  if ('code' in model) throw new GatewayError(model.code, model.message);
  // Native channels only (a translated channel's count would be of another request); a channel whose
  // path is a template has no count endpoint the gateway could name.
  const route = deps.router
    .scoped(callerGroup(request.caller))
    .routes(model.id, adapter.protocol)
    .find((r) => r.channel.protocol === adapter.protocol && !r.channel.path_template);
  const counted = route ? await upstreamCount(deps, adapter, route, raw, request) : null;
  return counted ?? estimateUsage(model, info.promptDocument, 1).promptTokens;
}

/** The upstream's count, or null when it gave none (any failure: the local estimate answers). */
async function upstreamCount(deps: Pick<RelayDeps, 'dispatcher'>, adapter: ProtocolAdapter, route: Route, body: unknown, request: FastifyRequest): Promise<number | null> {
  const { channel, upstreamModel } = route;
  const counting = tokenCountOf(adapter);
  const asked = counting.request(upstreamModel, body);
  const target = upstreamTarget(channel.base_url, shapedPath(channel, asked.path, upstreamModel));
  try {
    const response = await (channelDispatcher(channel) ?? deps.dispatcher ?? upstreamAgent).request({
      origin: target.origin,
      path: target.path,
      method: 'POST',
      // The client's beta headers too: Claude Code counts bodies with beta fields (context_management), which
      // Anthropic refuses without their beta; a refused count would fall back to the estimate unseen.
      headers: { 'content-type': 'application/json', ...shapedHeaders(channel, adapter.authHeaders(channel.api_key)), ...forwardedHeaders(adapter, request.headers) },
      body: JSON.stringify(asked.body),
      headersTimeout: UPSTREAM_COUNT_TIMEOUT_MS,
      bodyTimeout: UPSTREAM_COUNT_TIMEOUT_MS,
    });
    const text = await textWithin(response.body, ERROR_BODY_BYTES);
    if (response.statusCode !== 200) return null;
    const count = counting.count(tryJson(text));
    return typeof count === 'number' && Number.isSafeInteger(count) && count >= 0 ? count : null;
  } catch (error) {
    request.log.info({ err: error, channel: channel.id }, 'upstream token count failed: the local estimate answers');
    return null;
  }
}

/** The registration's token count of the protocol (only routes of a protocol that has one count). */
function tokenCountOf(adapter: ProtocolAdapter): TokenCount {
  const counting = chatProtocol(adapter.protocol).tokenCount;
  if (!counting) throw new Error(`the ${adapter.protocol} protocol has no token count`);
  return counting;
}
