import { ChannelBoard } from './board';
import { inGroup } from './groups';
import type { ChannelConfig, ChatProtocol, GatewayConfig } from '../config/schema';

export interface Route {
  readonly channel: ChannelConfig;
  readonly upstreamModel: string;
  /** Where the attempts on this route report their outcome (src/channels); absent: nowhere. */
  readonly board?: ChannelBoard;
}

export const MAX_CHANNELS_PER_REQUEST = 3;

function upstreamIdOf(channel: ChannelConfig, modelId: string): string | null {
  if (Array.isArray(channel.models)) return channel.models.includes(modelId) ? modelId : null;
  return (channel.models as Record<string, string>)[modelId] ?? null;
}

/** Weighted shuffle: each pick is proportional to the remaining channels' weights. */
function weightedOrder<T extends { channel: ChannelConfig }>(items: T[], random: () => number): T[] {
  const pool = [...items];
  const ordered: T[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((sum, item) => sum + item.channel.weight, 0);
    let ticket = random() * total;
    let index = pool.findIndex((item) => (ticket -= item.channel.weight) < 0);
    if (index < 0) index = pool.length - 1;
    ordered.push(pool.splice(index, 1)[0]!);
  }
  return ordered;
}

/** What a call routes with: the router itself, or its view for one channel group (`Router.scoped`). */
export interface RouteSource {
  hasRoute(modelId: string, protocol: ChatProtocol | string): boolean;
  configured(modelId: string, protocol: ChatProtocol | string, accept?: (channel: ChannelConfig) => boolean): boolean;
  /** `prefer`: a channel put first among those of its priority when it is usable (a session's pin). */
  routes(modelId: string, protocol: ChatProtocol | string, accept?: (channel: ChannelConfig) => boolean, prefer?: string): Route[];
}

/** The same source with `prefer` given to every `routes` (src/channels/session-pins.ts); null: the source itself. */
export function preferring(source: RouteSource, channelId: string | null): RouteSource {
  if (channelId === null) return source;
  return {
    hasRoute: (modelId, protocol) => source.hasRoute(modelId, protocol),
    configured: (modelId, protocol, accept) => source.configured(modelId, protocol, accept),
    routes: (modelId, protocol, accept) => source.routes(modelId, protocol, accept, channelId),
  };
}

/** The channels to try for a model on a protocol: lower priority first, equal
 * priority balanced by weight, at most three per request; channels cooling down or disabled are
 * left out (src/channels). */
export class Router implements RouteSource {
  /** Per protocol and model: the routes grouped by priority, lowest first (built per config). */
  private byKey = new Map<string, Route[][]>();

  constructor(
    config: GatewayConfig,
    private readonly random: () => number = Math.random,
    readonly board: ChannelBoard = new ChannelBoard(),
  ) {
    this.replace(config);
  }

  /** The routes of a reloaded config; calls that took their routes before keep them. */
  replace(config: GatewayConfig): void {
    const board = this.board;
    const byKey = new Map<string, Route[][]>();
    const flat = new Map<string, Route[]>();
    for (const channel of config.channels) {
      const ids = Array.isArray(channel.models) ? channel.models : Object.keys(channel.models);
      for (const id of ids) {
        const key = `${channel.protocol}\n${id}`;
        const routes = flat.get(key) ?? [];
        routes.push({ channel, upstreamModel: upstreamIdOf(channel, id)!, board });
        flat.set(key, routes);
      }
    }
    for (const [key, routes] of flat) {
      const priorities = [...new Set(routes.map((r) => r.channel.priority))].sort((a, b) => a - b);
      byKey.set(key, priorities.map((p) => routes.filter((r) => r.channel.priority === p)));
    }
    this.byKey = byKey;
  }

  hasRoute(modelId: string, protocol: ChatProtocol | string): boolean {
    return this.byKey.has(`${protocol}\n${modelId}`);
  }

  /** The routes of the channels of one group only (src/channels/groups.ts); null: every channel. */
  scoped(group: string | null): RouteSource {
    if (group === null) return this;
    const only = (accept?: (channel: ChannelConfig) => boolean) => (channel: ChannelConfig) => inGroup(channel, group) && (accept?.(channel) ?? true);
    return {
      hasRoute: (modelId, protocol) => this.configured(modelId, protocol, only()),
      configured: (modelId, protocol, accept) => this.configured(modelId, protocol, only(accept)),
      routes: (modelId, protocol, accept, prefer) => this.routes(modelId, protocol, only(accept), prefer),
    };
  }

  /** Whether a channel is configured for the model on the protocol (`accept` keeps only some), whatever its health. */
  configured(modelId: string, protocol: ChatProtocol | string, accept?: (channel: ChannelConfig) => boolean): boolean {
    return (this.byKey.get(`${protocol}\n${modelId}`) ?? []).some((group) => group.some((r) => accept?.(r.channel) ?? true));
  }

  /** `accept` keeps only some channels (before the cut to three); `prefer` goes first among the usable
   * channels of its priority, never before a lower priority nor past a channel's health or `accept`. */
  routes(modelId: string, protocol: ChatProtocol | string, accept?: (channel: ChannelConfig) => boolean, prefer?: string): Route[] {
    const ordered: Route[] = [];
    for (const group of this.byKey.get(`${protocol}\n${modelId}`) ?? []) {
      const candidates = group.filter((r) => this.board.usable(r.channel.id) && (accept?.(r.channel) ?? true));
      const preferred = prefer === undefined ? -1 : candidates.findIndex((r) => r.channel.id === prefer);
      if (preferred >= 0) ordered.push(candidates[preferred]!, ...weightedOrder(candidates.filter((_, i) => i !== preferred), this.random));
      else if (candidates.length === 1) ordered.push(candidates[0]!);
      else if (candidates.length > 1) ordered.push(...weightedOrder(candidates, this.random));
      if (ordered.length >= MAX_CHANNELS_PER_REQUEST) break;
    }
    return ordered.length > MAX_CHANNELS_PER_REQUEST ? ordered.slice(0, MAX_CHANNELS_PER_REQUEST) : ordered;
  }
}
