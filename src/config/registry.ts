import { CHAT_PROTOCOLS, channelServes, type ChatProtocol, type GatewayConfig, type ModelConfig } from './schema';

/** The model registry: canonical entries, aliases, and which client protocols each
 * model can be called on given the configured channels (natively, or through protocol
 * translation where a channel allows it). */
export class ModelRegistry {
  private readonly byId = new Map<string, ModelConfig>();
  private readonly aliases = new Map<string, string>();
  private readonly protocols = new Map<string, Set<ChatProtocol>>();

  constructor(readonly config: GatewayConfig) {
    for (const model of config.models) {
      this.byId.set(model.id, model);
      for (const alias of model.aliases) this.aliases.set(alias, model.id);
    }
    for (const channel of config.channels) {
      if (!(CHAT_PROTOCOLS as readonly string[]).includes(channel.protocol)) continue;
      const ids = Array.isArray(channel.models) ? channel.models : Object.keys(channel.models);
      for (const id of ids) {
        const set = this.protocols.get(id) ?? new Set<ChatProtocol>();
        for (const client of CHAT_PROTOCOLS) if (channelServes(channel, client)) set.add(client);
        this.protocols.set(id, set);
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

  /** Client protocols with a path to the model (a native channel, or one that translates), in the spec's protocol order. */
  supportedProtocols(modelId: string): ChatProtocol[] {
    const set = this.protocols.get(modelId);
    return set ? CHAT_PROTOCOLS.filter((p) => set.has(p)) : [];
  }

  /** Whether a key's allow-list (null = all) admits the model; entries may be aliases. */
  allows(allowList: readonly string[] | null, modelId: string): boolean {
    if (allowList === null) return true;
    return allowList.some((entry) => (this.resolve(entry)?.id ?? entry) === modelId);
  }
}
