import { CHAT_PROTOCOLS, channelServes, type ChatProtocol, type GatewayConfig, type ModelConfig } from './schema';

/** The model registry: canonical entries, aliases, and which client protocols each
 * model can be called on given the configured channels (natively, or through protocol
 * translation where a channel allows it). A reload (`replace`) swaps the whole config at once, in
 * one turn of the event loop: a call that resolved its model and channels before keeps them. */
export class ModelRegistry {
  private byId = new Map<string, ModelConfig>();
  private aliases = new Map<string, string>();
  /** Per model: the chat channels that serve it and the client protocols each serves. */
  private protocols = new Map<string, { channelId: string; clients: ChatProtocol[] }[]>();
  /** Whether a channel is routed to now (src/channels); default: every one. */
  private usable: (channelId: string) => boolean = () => true;
  private current: GatewayConfig;
  private readonly replaced: ((config: GatewayConfig) => void)[] = [];

  constructor(config: GatewayConfig) {
    this.current = config;
    this.index(config);
  }

  /** The config in force. */
  get config(): GatewayConfig {
    return this.current;
  }

  /** Applies a validated config: models, aliases, prices and channels together. */
  replace(config: GatewayConfig): void {
    this.byId = new Map();
    this.aliases = new Map();
    this.protocols = new Map();
    this.current = config;
    this.index(config);
    for (const listener of this.replaced) listener(config);
  }

  /** Told of every `replace` (the router rebuilds its routes). */
  onReplace(listener: (config: GatewayConfig) => void): void {
    this.replaced.push(listener);
  }

  private index(config: GatewayConfig): void {
    for (const model of config.models) {
      this.byId.set(model.id, model);
      for (const alias of model.aliases) this.aliases.set(alias, model.id);
    }
    for (const channel of config.channels) {
      if (!(CHAT_PROTOCOLS as readonly string[]).includes(channel.protocol)) continue;
      const ids = Array.isArray(channel.models) ? channel.models : Object.keys(channel.models);
      for (const id of ids) {
        const list = this.protocols.get(id) ?? [];
        list.push({ channelId: channel.id, clients: CHAT_PROTOCOLS.filter((client) => channelServes(channel, client)) });
        this.protocols.set(id, list);
      }
    }
  }

  get models(): readonly ModelConfig[] {
    return this.config.models;
  }

  /** Canonical entry for an id or a historic alias. */
  resolve(idOrAlias: string): ModelConfig | undefined {
    return this.byId.get(idOrAlias) ?? this.byId.get(this.aliases.get(idOrAlias) ?? '');
  }

  /** The catalogue follows live channel state: a channel cooling down or disabled gives no protocol. */
  followHealth(health: { usable(channelId: string): boolean }): void {
    this.usable = (channelId) => health.usable(channelId);
  }

  /** Client protocols with a path to the model now (a usable native channel, or one that translates), in the spec's protocol order. */
  supportedProtocols(modelId: string): ChatProtocol[] {
    const set = new Set<ChatProtocol>();
    for (const { channelId, clients } of this.protocols.get(modelId) ?? []) if (this.usable(channelId)) for (const c of clients) set.add(c);
    return CHAT_PROTOCOLS.filter((p) => set.has(p));
  }

  /** Whether a key's allow-list (null = all) admits the model; entries may be aliases. */
  allows(allowList: readonly string[] | null, modelId: string): boolean {
    if (allowList === null) return true;
    return allowList.some((entry) => (this.resolve(entry)?.id ?? entry) === modelId);
  }
}
