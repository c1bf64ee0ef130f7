/**
 * The translated path of a chat call: a client protocol served by a channel of another protocol.
 * The relay stays the same (hold, failover, settlement); this module supplies the routes that
 * translate, an upstream-side adapter whose request is the client's request re-encoded for the
 * channel, and the conversions of the answer and of the stream back to the client's protocol.
 * Usage is billed from the channel's own answer with its native extractor, exactly once.
 */
import { CHAT_PROTOCOLS, channelServes, type ChannelConfig, type ChatProtocol, type ModelConfig } from '../../config/schema';
import type { ChatRequestInfo, ProtocolAdapter } from '../../upstream/contract';
import { MAX_ESTIMATED_OUTPUT } from '../../upstream/pricing';
import { nativeAdapter, translatorOf } from '../../upstream/protocols/registry';
import { MAX_CHANNELS_PER_REQUEST, type Route, type RouteSource } from '../../channels/routing';
import { carriesBuiltinTool, streamBridge, type AnswerContext, type CanonicalRequest, type StreamBridge } from '../../upstream/translate';

/** A route to a channel of another protocol (`via`) that allows translation for the client's. */
export interface TranslatedRoute extends Route {
  readonly via: ChatProtocol;
}

export const isTranslated = (route: Route): route is TranslatedRoute => 'via' in route;

/** Channels of the other protocols that translate for `client`: lower priority first (each
 * protocol's own weighted order kept, the sort is stable), at most three. */
export function translatedRoutes(router: RouteSource, modelId: string, client: ChatProtocol, accept?: (channel: ChannelConfig, via: ChatProtocol) => boolean): TranslatedRoute[] {
  return CHAT_PROTOCOLS.filter((p) => p !== client)
    .flatMap((via) => router.routes(modelId, via, (channel) => channelServes(channel, client) && (accept?.(channel, via) ?? true)).map((route) => ({ ...route, via })))
    .sort((a, b) => a.channel.priority - b.channel.priority)
    .slice(0, MAX_CHANNELS_PER_REQUEST);
}

/** The routes of a request with built-in tools: channels that list every one of them, native first;
 * a translating channel only when the translation carries each tool to the channel's protocol
 * (image_generation: chat-completions clients on responses channels). */
export function builtinToolRoutes(router: RouteSource, modelId: string, client: ChatProtocol, tools: readonly string[]): Route[] {
  const offers = (channel: ChannelConfig) => tools.every((tool) => channel.tools.includes(tool));
  const native = router.routes(modelId, client, offers);
  if (native.length > 0) return native;
  return translatedRoutes(router, modelId, client, (channel, via) => offers(channel) && tools.every((tool) => carriesBuiltinTool(client, via, tool)));
}

/** The client's request in canonical form, decoded once per call, with the fields it lost. */
export interface DecodedCall {
  readonly request: CanonicalRequest;
  readonly dropped: readonly string[];
  readonly context: AnswerContext;
}

export function decodeCall(
  client: ProtocolAdapter,
  body: unknown,
  params: { model?: string; stream?: boolean },
  info: ChatRequestInfo,
  created: number,
  headers: Readonly<Record<string, string | string[] | undefined>> = {},
): DecodedCall {
  const { value, dropped } = translatorOf(client.protocol).decodeRequest(body, params);
  const includeUsage = (body as { stream_options?: { include_usage?: unknown } | null } | null)?.stream_options?.include_usage === true;
  return { request: value, dropped: [...dropped, ...droppedHeaders(client, headers)], context: { model: info.model, created, includeUsage, request: value } };
}

/** The client's vendor headers that another vendor cannot be given, named like dropped fields: its betas
 * (`anthropic-beta`: Claude Code's interleaved thinking, 1M context, ...; `openai-beta`). A protocol version
 * is not among them: the answer comes back in the client's protocol, the version it asked for. */
function droppedHeaders(client: ProtocolAdapter, headers: Readonly<Record<string, string | string[] | undefined>>): string[] {
  return client.forwardedHeaders
    .map((entry) => (typeof entry === 'string' ? entry : entry[0]))
    .filter((name) => !name.endsWith('-version') && headers[name] !== undefined);
}

/** One translated attempt: what the relay needs to send it and to answer the client. */
export interface Translation {
  /** The channel's side: its path, body (the re-encoded request), auth, usage and stream observer;
   * errors in the client's shape. */
  readonly adapter: ProtocolAdapter;
  /** The re-encoded request as the channel's protocol reads it (its prompt, output cap and number
   * of answers: what the hold must cover), or null if that protocol would not take it. */
  readonly asked: ChatRequestInfo | null;
  /** `X-Protocol-Translation`, and `X-Protocol-Warning` when a request field was dropped. */
  readonly headers: Readonly<Record<string, string>>;
  /** The channel's non-streamed answer in the client's protocol. */
  answer(upstream: unknown): unknown;
  /** A fresh converter of the channel's stream events into the client's. */
  bridge(): StreamBridge;
}

export function translationFor(call: DecodedCall, client: ProtocolAdapter, route: TranslatedRoute, model: ModelConfig): Translation {
  const upstream = nativeAdapter(route.via);
  // Anthropic requires max_tokens: the cap the hold was computed with.
  const defaultMaxTokens = Math.min(model.default_max_tokens ?? MAX_ESTIMATED_OUTPUT, MAX_ESTIMATED_OUTPUT);
  const encoded = translatorOf(route.via).encodeRequest(call.request, { model: route.upstreamModel, defaultMaxTokens });
  // Field names come from the client's JSON: only printable ASCII may go into a header.
  const warnings = [...new Set([...call.dropped, ...encoded.dropped].map((name) => name.replace(/[^\x20-\x7e]/g, '?')))];
  // Read with the channel's own adapter: the prompt the channel will count, and as many answers as
  // the translation carried of the client's `n` (one when it dropped it).
  const asked = upstream.inspect(encoded.value, { model: route.upstreamModel, stream: call.request.stream });
  return {
    asked: 'invalid' in asked ? null : asked,
    adapter: {
      ...upstream,
      shape: client.shape,
      // A client's vendor headers (anthropic-version, anthropic-beta) mean nothing to another vendor.
      forwardedHeaders: [],
      upstream: (_body, info, upstreamModel) => upstream.upstream(encoded.value, info, upstreamModel),
      observe: (info) => upstream.observe(info, encoded.value),
    },
    headers: {
      'x-protocol-translation': `${client.protocol}->${route.via}`,
      ...(warnings.length > 0 ? { 'x-protocol-warning': warnings.join(', ') } : {}),
    },
    answer: (body) => translatorOf(client.protocol).encodeResponse(translatorOf(route.via).decodeResponse(body), call.context),
    bridge: () => streamBridge(translatorOf(route.via).streamDecoder(), translatorOf(client.protocol).streamEncoder(call.context)),
  };
}
