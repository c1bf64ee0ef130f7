import type { FastifyRequest } from 'fastify';
import type { ModelRegistry } from '../../config/registry';
import { CHAT_PROTOCOLS, channelServes, type ModelConfig } from '../../config/schema';
import { fallbackChain } from '../../config/fallbacks';
import { preferring, type Route, type RouteSource, type Router } from '../../channels/routing';
import type { SessionPins } from '../../channels/session-pins';
import { callerGroup } from '../../channels/groups';
import type { ChatRequestInfo, ProtocolAdapter, Usage } from '../../upstream/contract';
import { pricingOf, type TokenPricing } from '../../upstream/pricing';
import { usageBounds, type UsageBounds } from '../../upstream/usage';
import { requestShape, usageCeiling, type UsageCeiling } from '../../upstream/capture';
import { callableModel } from '../billable-call';
import type { ErrorCode } from '../errors';
import { pinnedOrder } from '../agents/pin';
import { callEstimate } from './estimate';
import { builtinToolRoutes, decodeCall, isTranslated, translatedRoutes, translationFor, type Translation } from './translated';

// A chat call's fallback chain as the stages of its channel ladder (src/http/channel-ladder.ts): the
// model asked for, then its fallbacks, each with its channels and what billing needs to know of it.

/** One model of the call's chain (the model asked for, then its fallbacks), with what its attempts share. */
export interface Stage {
  readonly model: ModelConfig;
  readonly routes: readonly Route[];
  /** How the request is re-encoded for each route's channel when it speaks another protocol (by rung). */
  readonly translations: readonly (Translation | null)[];
  readonly estimate: Usage;
  readonly bounds: UsageBounds;
  /** The most of the usage the call may be billed on (src/upstream/capture.ts). */
  readonly ceiling: UsageCeiling;
  readonly pricing: TokenPricing;
  /** Some channel may be asked for 1-hour cache writes: the hold assumes their price (src/upstream/pricing.ts `holdAmount`). */
  readonly longCacheWrites: boolean;
}

/**
 * The stages of one chat call, or why no model of its chain has a channel for it (the first model's reason).
 * `pin`: a session to pin to one channel by rendezvous hashing (agent calls' `session_id` header,
 * src/http/agents/pin.ts); `session`: the call's session hint (./session-hint.ts), whose pin in `deps.pins`
 * (src/channels/session-pins.ts) puts its channel first when it is usable for the call, before `pin` is looked at.
 */
export function chatStages(
  deps: { readonly registry: ModelRegistry; readonly router: Router; readonly now: () => number; readonly pins?: SessionPins | undefined },
  adapter: ProtocolAdapter,
  request: FastifyRequest,
  model: ModelConfig,
  info: ChatRequestInfo,
  params: { model?: string; stream?: boolean; pin?: string | undefined; session?: string | undefined },
): Stage[] | { code: ErrorCode; message: string } {
  const caller = request.caller!;
  const pin = params.pin;
  const session = params.session;
  // Per account: another tenant's calls with the same session id never see nor move this one's pin.
  const pinOf = (m: ModelConfig) => (session === undefined || deps.pins === undefined ? null : deps.pins.pinned(caller.accountId, m.id, session));
  // Only the channels of the caller's group (its key's, else its account's; none bound: every channel).
  const group = callerGroup(caller);
  const router = deps.router.scoped(group);
  // The model, then its fallbacks (src/config/fallbacks.ts) the key may use, each with the channels it
  // would try, taken now: a reload during the call changes none of them.
  const chain = fallbackChain(model, (id) => deps.registry.resolve(id)).filter((m, i) => i === 0 || usableFallback(deps, caller.key.settings.allowed_models, m));
  const pins = chain.map(pinOf);
  const stateful = previousResponse(adapter, request.body);
  const found = chain.map((m, i) => routesFor(preferring(router, pins[i] ?? null), group, adapter, m, info, stateful));
  const first = found[0]!;
  if ('code' in first && found.every((f) => 'code' in f)) return first;
  const staged = chain.flatMap((m, i) => {
    const f = found[i]!;
    if ('code' in f) return [];
    const stuck = stickFirst(f.routes, pins[i] ?? null);
    return [{ model: m, routes: stuck ?? pinnedOrder(f.routes, pin, (route) => route.channel.id) }];
  });
  // Translated: the client's request decoded once, and re-encoded for each route's channel.
  const decoded = staged.some((st) => st.routes.some(isTranslated)) ? decodeCall(adapter, request.body, params, info, deps.now(), request.headers) : null;
  const shape = requestShape(request.body);
  return staged.map(({ model: m, routes }) => {
    const translations = routes.map((route) => (decoded && isTranslated(route) ? translationFor(decoded, adapter, route, m) : null));
    const asked = translations.map((t) => t?.asked ?? info);
    const estimate = callEstimate(m, asked);
    const pricing = pricingOf(m, deps.registry.config.discounts);
    const ceiling = usageCeiling(m, shape, info.maxTokens, info.choices, estimate.outputTokens);
    return { model: m, routes, translations, estimate, bounds: usageBounds(m, info), ceiling, pricing, longCacheWrites: asked.some((r) => r.longCacheWrites === true) };
  });
}

/** The routes with the pinned channel first, when it is among them at the best priority offered (a pin is
 * a preference among equals: it never passes over a lower priority, a sick channel or another group);
 * null when it is not. */
function stickFirst(routes: readonly Route[], pinned: string | null): Route[] | null {
  if (pinned === null || routes.length === 0) return null;
  const at = routes.findIndex((route) => route.channel.id === pinned);
  if (at < 0 || routes[at]!.channel.priority !== routes[0]!.channel.priority) return null;
  return [routes[at]!, ...routes.filter((_, i) => i !== at)];
}

/** Whether a fallback model may serve the caller's call: callable, on the chat endpoints, and on the key's allow-list. */
function usableFallback(deps: { readonly registry: ModelRegistry }, allowList: readonly string[] | null, model: ModelConfig): boolean {
  const callable = callableModel(deps.registry, allowList, model.id);
  return !('code' in callable) && callable.kind === 'text' && !callable.endpoint_type;
}

/** The routes of one model for the call, or why it has none. */
function routesFor(
  router: RouteSource,
  group: string | null,
  adapter: ProtocolAdapter,
  model: ModelConfig,
  info: ChatRequestInfo,
  stateful: string | null,
): { routes: Route[] } | { code: ErrorCode; message: string } {
  const reject = (code: ErrorCode, message: string) => ({ code, message });
  let routes: Route[] = router.routes(model.id, adapter.protocol);
  // A response that continues a stored one needs the channel that stored it: a translation has no
  // such state upstream and would answer without the conversation (billed, and wrong).
  if (routes.length === 0 && stateful !== null && translatedRoutes(router, model.id, adapter.protocol).length > 0)
    return reject(
      'invalid_request',
      `\`previous_response_id\` needs a channel that keeps responses upstream; the model \`${model.id}\` is served here only through a translation to another protocol, which keeps no state. Send the whole conversation in \`input\` (with \`store: false\`) instead.`,
    );
  // No native channel: channels of another protocol that translate for this one.
  if (routes.length === 0) routes = translatedRoutes(router, model.id, adapter.protocol);
  if (routes.length === 0) {
    const resting = CHAT_PROTOCOLS.some((via) => router.configured(model.id, via, (channel) => channelServes(channel, adapter.protocol)));
    const where = group === null ? '' : ` in the channel group \`${group}\``;
    return reject('no_channel_available', resting ? `Every channel of the model \`${model.id}\`${where} for the ${adapter.protocol} protocol is cooling down or disabled; retry later.` : `The model \`${model.id}\` has no channel${where} for the ${adapter.protocol} protocol.`);
  }
  if (info.builtinTools.length === 0) return { routes };
  // A built-in tool runs on a channel that lists it: natively, or through a translation that carries it.
  const capable = builtinToolRoutes(router, model.id, adapter.protocol, info.builtinTools);
  if (capable.length > 0) return { routes: capable };
  const missing = info.builtinTools.find((tool) => builtinToolRoutes(router, model.id, adapter.protocol, [tool]).length === 0);
  const tools = missing ? `The built-in tool \`${missing}\` is` : `The built-in tools ${info.builtinTools.map((t) => `\`${t}\``).join(' and ')} together are`;
  return reject('tool_not_supported', `${tools} not supported for the model \`${model.id}\` on the ${adapter.protocol} protocol.`);
}

/** The stored response a Responses request continues (`previous_response_id`), or null. */
function previousResponse(adapter: ProtocolAdapter, body: unknown): string | null {
  if (adapter.protocol !== 'responses' || typeof body !== 'object' || body === null) return null;
  const id = (body as { previous_response_id?: unknown }).previous_response_id;
  return typeof id === 'string' && id !== '' ? id : null;
}
