import type { Dispatcher } from 'undici';
import type { ChannelBoard } from '../channels/board';
import { failover, type CallSignalState } from '../channels/failover';
import { callOf } from '../channels/health';
import type { ModelRegistry } from '../config/registry';
import type { ChannelConfig, ModelConfig, VideoKind } from '../config/schema';
import { videoKindOf } from '../config/video-kind';
import { fetchClipTemplate, fetchClipTemplates, type ClipTemplate, type ClipTemplateList, type TemplateAnswer } from '../upstream/protocols/clip-templates';
import { MAX_CHANNELS_PER_REQUEST } from '../channels/routing';
import type { Failure } from '../upstream/upstream-call';
import { TtlCache } from './ttl-cache';

/** The spec's template scenes: `virtualman`, and one per clip SKU. */
export const CLIP_SCENES = ['virtualman', 'realMan', 'oralMixCutting', 'newsMixCutting'] as const;
export type ClipScene = (typeof CLIP_SCENES)[number];

/** The video kinds that are smart-clip SKUs: their templates come from their channels' upstream. */
export const CLIP_KINDS = ['clip-realman', 'clip-mixcut', 'clip-news'] as const satisfies readonly VideoKind[];

/** DESIGN.md: the gateway keeps template answers 10 minutes. */
export const CLIP_TEMPLATE_TTL_MS = 10 * 60 * 1000;
/** One template request to one upstream; the next channel is tried after it. */
export const CLIP_TEMPLATE_TIMEOUT_MS = 10_000;

export const isClipModel = (model: ModelConfig): boolean =>
  model.callable && (CLIP_KINDS as readonly string[]).includes(videoKindOf(model));

/** What a template request came to: the answer, no such template (404), or every channel failed (the last failure). */
export type TemplateLookup<T> = { readonly kind: 'found'; readonly value: T } | { readonly kind: 'not_found' } | { readonly kind: 'failed'; readonly failure: Failure };

export interface ClipTemplatesOptions {
  /** Milliseconds; the cache's clock. */
  readonly now?: () => number;
  readonly timeoutMs?: number;
  readonly dispatcher?: Dispatcher;
  /** Channel health (src/channels): channels not usable are skipped, and every lookup's outcome is recorded. */
  readonly board?: Pick<ChannelBoard, 'usable' | 'failed' | 'record'>;
}

/**
 * Clip templates as the gateway serves them: read from the upstream of a `clip-*` model's `videos` channel
 * and kept 10 minutes per channel. A channel is picked the same way every time (lowest priority first, then
 * the config's order) so that repeated requests meet the same cache entry; the next is tried when one fails
 * (a connection, a time-out, a 5xx).
 */
export class ClipTemplates {
  private readonly lists: TtlCache<TemplateLookup<ClipTemplateList>>;
  private readonly templates: TtlCache<TemplateLookup<ClipTemplate>>;
  private readonly timeoutMs: number;

  constructor(
    private readonly registry: ModelRegistry,
    private readonly options: ClipTemplatesOptions = {},
  ) {
    this.lists = new TtlCache(CLIP_TEMPLATE_TTL_MS, options.now);
    this.templates = new TtlCache(CLIP_TEMPLATE_TTL_MS, options.now);
    this.timeoutMs = options.timeoutMs ?? CLIP_TEMPLATE_TIMEOUT_MS;
  }

  /** The clip models a key's allow-list (null: every model) admits. */
  allowedClipModels(allowList: readonly string[] | null): ModelConfig[] {
    return this.registry.models.filter((m) => isClipModel(m) && this.registry.allows(allowList, m.id));
  }

  /** The `videos` channels serving any of these models, in the order they are tried. */
  channelsFor(models: readonly ModelConfig[]): ChannelConfig[] {
    const ids = new Set(models.map((m) => m.id));
    return this.registry.config.channels
      .filter((c) => c.protocol === 'videos' && (Array.isArray(c.models) ? c.models : Object.keys(c.models)).some((id) => ids.has(id)))
      .filter((c) => this.options.board?.usable(c.id) ?? true)
      .map((channel, index) => ({ channel, index }))
      .sort((a, b) => a.channel.priority - b.channel.priority || a.index - b.index)
      .slice(0, MAX_CHANNELS_PER_REQUEST)
      .map((c) => c.channel);
  }

  list(channels: readonly ChannelConfig[], scene: ClipScene): Promise<TemplateLookup<ClipTemplateList>> {
    return this.first(channels, (channel, asked) =>
      this.lists.get(`${channel.id}\n${scene}`, async () => lookupOf(await asked(fetchClipTemplates(channel, scene, this.fetchOptions()))), kept),
    );
  }

  template(channels: readonly ChannelConfig[], id: string): Promise<TemplateLookup<ClipTemplate>> {
    return this.first(channels, (channel, asked) =>
      this.templates.get(`${channel.id}\n${id}`, async () => lookupOf(await asked(fetchClipTemplate(channel, id, this.fetchOptions()))), kept),
    );
  }

  private fetchOptions() {
    return { timeoutMs: this.timeoutMs, ...(this.options.dispatcher ? { dispatcher: this.options.dispatcher } : {}) };
  }

  /** The first channel's answer that is not a failure worth another channel. */
  private async first<T>(
    channels: readonly ChannelConfig[],
    ask: (channel: ChannelConfig, asked: <A>(request: Promise<A>) => Promise<A>) => Promise<TemplateLookup<T>>,
  ): Promise<TemplateLookup<T>> {
    let last: TemplateLookup<T> = { kind: 'failed', failure: { kind: 'unreachable', message: 'no channel serves a clip model' } };
    const board = this.options.board;
    for (const channel of channels) {
      const startedAt = performance.now();
      // Whether this lookup asked the upstream: a cached answer says nothing new about the channel.
      let upstream = false;
      last = await ask(channel, (request) => {
        upstream = true;
        return request;
      });
      const latencyMs = Math.round(performance.now() - startedAt);
      if (last.kind !== 'failed') {
        if (upstream) board?.record(channel.id, { kind: 'success', latencyMs }, GATEWAY);
        return last;
      }
      // The one failover rule of every ladder, its outcome on the channel's health; a template lookup has no
      // call budget of its own. Its answer is cached for every account, so it is the gateway's own: its
      // failures alone never cool or disable the channel, a probe decides (src/channels/health.ts).
      const verdict = board ? board.failed(channel.id, last.failure, NO_CALL_SIGNAL_STATE, latencyMs, null) : failover(last.failure, NO_CALL_SIGNAL_STATE);
      last = { kind: 'failed', failure: verdict.failure };
      if (!verdict.next) return last;
    }
    return last;
  }
}

/** Template lookups are the gateway's own work (their answers are shared by every account). */
const GATEWAY = callOf(null);

/** A template lookup runs within the probes' budget, not a call's: never expired or ended by the shutdown here. */
const NO_CALL_SIGNAL_STATE: CallSignalState = { expired: false, shuttingDown: false, aborted: false };

/** Only answers are kept: a failure is asked again next time. A 404 is not kept either, so a template
 * the upstream adds is seen at once. */
const kept = (lookup: TemplateLookup<unknown>) => lookup.kind === 'found';

function lookupOf<T>(answer: TemplateAnswer<T>): TemplateLookup<T> {
  if (answer.ok) return { kind: 'found', value: answer.value };
  if (answer.failure.kind === 'status' && answer.failure.status === 404) return { kind: 'not_found' };
  return { kind: 'failed', failure: answer.failure };
}
