import { z } from 'zod';
import { fallbackProblems } from './fallbacks';
import { VIDEO_KINDS, videoKindProblem } from './video-kind';

export { VIDEO_KINDS, type VideoKind } from './video-kind';

/** An exact decimal USD amount written as a string, e.g. "0.15". Floats are refused:
 * a price must survive the trip into integer units without rounding. */
// `abort`: a refinement added to it (an upper bound) parses the amount, which a text that is no
// decimal would make throw (a 500 where the client deserves this 400).
export const UsdString = z
  .string()
  .regex(/^\d+(\.\d{1,9})?$/, { message: 'a decimal string with at most 9 fractional digits, e.g. "0.15"', abort: true });

export const CHAT_PROTOCOLS = ['chat-completions', 'messages', 'responses', 'generate-content'] as const;
export type ChatProtocol = (typeof CHAT_PROTOCOLS)[number];

export const CHANNEL_PROTOCOLS = [...CHAT_PROTOCOLS, 'images', 'videos', 'music', 'speech', 'transcripts', 'avatars', 'embeddings'] as const;

export const MODEL_KINDS = ['text', 'image', 'video', 'music', 'speech', 'transcript', 'avatar', 'embedding'] as const;

export const CAPABILITIES = ['tools', 'vision', 'web_search', 'image_gen', 'video_gen', 'thinking', 'json', 'open-source'] as const;

const TieredUsd = z.union([UsdString, z.record(z.string(), UsdString)]);

/** Built-in tools whose calls the upstream counts, so that a per-call fee can be charged on them. */
export const FEE_TOOLS = ['web_search', 'image_generation'] as const;
export type FeeTool = (typeof FEE_TOOLS)[number];

/** USD per built-in tool call, by tool (`{web_search: "0.01"}`), charged on the upstream's count. */
const ToolCallFees = z.object({ web_search: UsdString.optional(), image_generation: UsdString.optional() } satisfies Record<FeeTool, unknown>).strict();

/** A moment as an operator writes it (config files, admin bodies), as Unix seconds: a number or digits
 * of Unix seconds, a date `YYYY-MM-DD` (its UTC midnight), or an RFC 3339 date-time with its offset
 * (`2026-01-01T00:00:00Z`). */
export const Instant = z
  .union([
    z.number().int().nonnegative(),
    z.string().regex(/^(\d+|\d{4}-\d{2}-\d{2}|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))$/, 'Unix seconds, YYYY-MM-DD or an RFC 3339 date-time with its offset'),
  ])
  .transform((v, ctx) => {
    if (typeof v === 'number' || /^\d+$/.test(v)) return Number(v);
    const ms = Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v);
    if (Number.isNaN(ms)) {
      ctx.addIssue({ code: 'custom', message: `${v} is not a date` });
      return z.NEVER;
    }
    return Math.floor(ms / 1000);
  });

/** A promotional price: every token price of the model times `multiplier` (at most 1), for calls
 * submitted in [from, until) (either end open when absent). */
const DiscountFields = {
  multiplier: UsdString.refine((m) => /^(0(\.\d+)?|1(\.0+)?)$/.test(m), 'a discount multiplier is between 0 and 1, e.g. "0.8"'),
  from: Instant.optional(),
  until: Instant.optional(),
};
const windowIsOpen = (d: { from?: number | undefined; until?: number | undefined }) => d.from === undefined || d.until === undefined || d.from < d.until;
const EMPTY_WINDOW = { message: 'a discount ends (until) after it starts (from)', path: ['until'] };

export const DiscountSchema = z.object(DiscountFields).strict().refine(windowIsOpen, EMPTY_WINDOW);
export type Discount = z.infer<typeof DiscountSchema>;

/** A discount shared by several models (the spec's discount on a model family; the docs' family discount): the
 * models of one vendor (`owned_by`) or a list of model ids. `family` in code is a task family's word. */
export const SharedDiscountSchema = z
  .object({ ...DiscountFields, owned_by: z.string().min(1).optional(), models: z.array(z.string().min(1)).min(1).optional() })
  .strict()
  .refine(windowIsOpen, EMPTY_WINDOW)
  .refine((d) => (d.owned_by === undefined) !== (d.models === undefined), { message: 'a family discount names either owned_by or models' });
export type SharedDiscount = z.infer<typeof SharedDiscountSchema>;

export const PriceSchema = z
  .object({
    input: UsdString.optional(),
    cached_input: UsdString.optional(),
    output: UsdString.optional(),
    per_image: UsdString.optional(),
    per_second: TieredUsd.optional(),
    per_call: UsdString.optional(),
    per_1k_characters: UsdString.optional(),
    per_voice: UsdString.optional(),
    per_1m_completion_tokens: UsdString.optional(),
    tool_call_fee: ToolCallFees.optional(),
  })
  .strict();

export const ChannelSchema = z
  .object({
    id: z.string().min(1),
    protocol: z.enum(CHANNEL_PROTOCOLS),
    base_url: z.string().url(),
    api_key: z.string().default(''),
    group: z.string().default('default'),
    priority: z.number().int().default(0),
    weight: z.number().int().positive().default(1),
    /** public id -> upstream id; a list means the same ids. */
    models: z.union([z.array(z.string().min(1)), z.record(z.string(), z.string().min(1))]),
    tools: z.array(z.string()).default([]),
    /** Chat channels only: the other client protocols this channel also serves through protocol
     * translation. Absent or `true`: all of them; `false`: its own protocol only; a list: those. */
    translation: z.union([z.boolean(), z.array(z.enum(CHAT_PROTOCOLS))]).optional(),
    /** Chat channels: the most the upstream may take to start its answer (a stream: its headers); past
     * it the attempt is a time-out and the next channel is tried. Absent: the call's whole budget. */
    first_byte_timeout_s: z.number().positive().max(3600).optional(),
    /** Request shaping (every channel's requests and probes; docs/channels.md): extra headers sent on every request. */
    headers: z.record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name'), z.string()).optional(),
    /** The header that carries `api_key` instead of the protocol's own (e.g. `api-key` for Azure OpenAI). */
    auth_header: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name').optional(),
    /** The scheme before the key in that header (`""`: the key alone); default `Bearer` for `authorization`, else none. */
    auth_scheme: z.string().regex(/^[A-Za-z0-9._~+-]*$/, 'a scheme word, e.g. Bearer').optional(),
    /** Query parameters added to every request (e.g. `api-version`). */
    query: z.record(z.string().min(1), z.string()).optional(),
    /** Chat channels: the request path instead of the protocol's, after the base URL's path; `{model}` is the
     * upstream model id (e.g. `/openai/deployments/{model}/chat/completions`). */
    path_template: z.string().startsWith('/').optional(),
    /** An HTTP(S) proxy the channel's requests go through (CONNECT tunnel), e.g. `http://proxy.corp:3128`. */
    proxy: z.string().url().optional(),
  })
  .strict();

/** How channel failures are handled (src/channels, docs/channels.md). Absent: these defaults. */
export const ChannelHealthSchema = z
  .object({
    /** Consecutive failures (5xx, refused connections, time-outs, 429s) after which a channel cools down. */
    failures_before_cooldown: z.number().int().min(1).max(1000).default(3),
    /** The first cooldown, in seconds; each further one in a row doubles, up to `max_cooldown_s`. */
    cooldown_s: z.number().positive().max(86_400).default(30),
    max_cooldown_s: z.number().positive().max(7 * 86_400).default(1800),
    /** How often every channel is probed with a minimal request (the spec's 6 hours); 0: never. */
    probe_interval_s: z.number().min(0).max(7 * 86_400).default(21_600),
    /** The least time between two probes of one channel that its calls ask for (a 401/403, one account's run of failures); absent: 10. */
    confirm_probe_interval_s: z.number().positive().max(3600).optional(),
    /** A channel whose credentials a probe refused is probed again after this (absent: 15), doubling up to `max_credentials_retry_s` (absent: 300). */
    credentials_retry_s: z.number().positive().max(86_400).optional(),
    max_credentials_retry_s: z.number().positive().max(86_400).optional(),
  })
  .strict()
  .refine((h) => h.cooldown_s <= h.max_cooldown_s, { message: 'cooldown_s is at most max_cooldown_s', path: ['cooldown_s'] })
  // Absent: 15 and 300 (src/channels/health.ts DEFAULT_HEALTH_POLICY).
  .refine((h) => (h.credentials_retry_s ?? 15) <= (h.max_credentials_retry_s ?? 300), {
    message: 'credentials_retry_s is at most max_credentials_retry_s',
    path: ['credentials_retry_s'],
  });
export type ChannelHealthConfig = z.infer<typeof ChannelHealthSchema>;

/** Whether a channel serves clients of a protocol: natively, or through translation it allows. */
export function channelServes(channel: { protocol: string; translation?: boolean | readonly ChatProtocol[] }, client: ChatProtocol): boolean {
  if (channel.protocol === client) return true;
  if (!(CHAT_PROTOCOLS as readonly string[]).includes(channel.protocol)) return false;
  const translation = channel.translation ?? true;
  return translation === true || (Array.isArray(translation) && translation.includes(client));
}

/**
 * What a video SKU accepts and how it is billed beyond its prices (the spec's per-SKU rules):
 * `resolutions`: the values `resolution` may take (others are a 400; absent: any); `resolution_required`:
 * the lite tier, whose calls must name one; `default_resolution`: the tier a call without `resolution` is
 * priced at (absent: the dearest tier, the worst case); `video_mode`: the one SKU line that takes (the spec's "SKU family")
 * `video_mode` with a reference video; `token_billing`: a `video_url` item in `content` bills the task per
 * `per_1m_completion_tokens` instead of per second.
 */
export const VideoRulesSchema = z
  .object({
    /** Which kind of SKU this is: its body, rules and billing. Absent: the kind a spec-named id (dh-*,
     * clip-*) implies, else `standard` (src/config/video-kind.ts). */
    kind: z.enum(VIDEO_KINDS).optional(),
    resolutions: z.array(z.string().min(1)).min(1).optional(),
    resolution_required: z.boolean().default(false),
    default_resolution: z.string().min(1).optional(),
    video_mode: z.boolean().default(false),
    token_billing: z.boolean().default(false),
  })
  .strict();
export type VideoRules = z.infer<typeof VideoRulesSchema>;

export const ModelSchema = z
  .object({
    id: z.string().min(1),
    owned_by: z.string().default('gateway'),
    kind: z.enum(MODEL_KINDS).default('text'),
    aliases: z.array(z.string().min(1)).default([]),
    callable: z.boolean().default(true),
    endpoint_type: z.string().nullable().default(null),
    default_max_tokens: z.number().int().positive().optional(),
    context_window: z.number().int().positive().optional(),
    capabilities: z.array(z.enum(CAPABILITIES)).default([]),
    price: PriceSchema.default({}),
    /** Cache writes times the input price: 5-minute writes, and every write a protocol reports without its lifetime. */
    cache_write_multiplier: UsdString.optional(),
    /** 1-hour cache writes (Anthropic's `ephemeral_1h_input_tokens`) times the input price. Absent: 2 when
     * `cache_write_multiplier` is set (the vendor's price), else the same as 5-minute writes. */
    cache_write_1h_multiplier: UsdString.optional(),
    long_context: z.object({ threshold_tokens: z.number().int().positive(), multiplier: UsdString }).strict().optional(),
    discount: DiscountSchema.optional(),
    fixed_grid: z.number().int().positive().optional(),
    video: VideoRulesSchema.optional(),
    /** Chat models: other models (canonical ids, same kind) tried in order when every channel of this one
     * failed with a retryable error; theirs are tried in turn (src/config/fallbacks.ts). */
    fallbacks: z.array(z.string().min(1)).optional(),
  })
  .strict()
  .superRefine((model, ctx) => {
    const contradiction = videoKindProblem(model);
    if (contradiction) ctx.addIssue({ code: 'custom', path: contradiction.path === 'kind' ? ['kind'] : ['video', 'kind'], message: contradiction.message });
    if (model.video?.token_billing && !model.price.per_1m_completion_tokens)
      ctx.addIssue({ code: 'custom', path: ['price', 'per_1m_completion_tokens'], message: `model ${model.id} bills video references per token: it needs a per_1m_completion_tokens price` });
  });

/** A platform preset (a voice, an avatar): listed to clients and passed upstream as it is. */
const PresetSchema = z.object({ id: z.string().min(1), name: z.string().min(1) }).strict();

/** The free platform presets (DESIGN.md): voices for speech and digital humans, avatars. */
export const PresetsSchema = z
  .object({ voices: z.array(PresetSchema).default([]), avatars: z.array(PresetSchema).default([]) })
  .strict()
  .superRefine((presets, ctx) => {
    for (const list of ['voices', 'avatars'] as const) {
      const seen = new Set<string>();
      presets[list].forEach((p, i) => {
        if (seen.has(p.id)) ctx.addIssue({ code: 'custom', path: [list, i, 'id'], message: `duplicate preset id ${p.id}` });
        seen.add(p.id);
      });
    }
  });
export type Presets = z.infer<typeof PresetsSchema>;

/**
 * How the gateway probes media URLs a client names (clip inputs, digital-human sources) before any money
 * moves (src/media-check, docs/media.md "Media URL probing"). Absent: probing on, with these defaults.
 */
export const MediaProbeConfigSchema = z
  .object({
    /** false: every URL is passed on unprobed, for the upstream to judge. */
    enabled: z.boolean().default(true),
    /** Fetch from loopback, private, link-local and other non-public addresses (tests, closed networks). */
    allow_private_addresses: z.boolean().default(false),
    /** The whole probe of one URL: DNS, HEAD, redirects and ranged reads. */
    timeout_ms: z.number().int().min(100).max(10_000).default(3000),
    /** The most bytes read from one answer. */
    max_read_bytes: z.number().int().min(4096).max(8 * 1024 * 1024).default(1024 * 1024),
  })
  .strict();
export type MediaProbeConfig = z.infer<typeof MediaProbeConfigSchema>;

const KiB = 1024;
/** A body size: whole bytes, or a string with a binary unit (`512KB`, `16MB`, `1GB`: powers of 1024). */
const ByteSize = z
  .union([z.number().int(), z.string().regex(/^\s*\d+\s*(B|KB|MB|GB)?\s*$/i, 'a size: whole bytes, or e.g. "512KB", "16MB"')])
  .transform((v) => {
    if (typeof v === 'number') return v;
    const [, n, unit] = /^\s*(\d+)\s*(B|KB|MB|GB)?\s*$/i.exec(v)!;
    const factor = { B: 1, KB: KiB, MB: KiB * KiB, GB: KiB * KiB * KiB }[(unit ?? 'B').toUpperCase() as 'B' | 'KB' | 'MB' | 'GB'];
    return Number(n) * factor;
  })
  .pipe(z.number().int().min(KiB, 'at least 1KB').max(KiB * KiB * KiB, 'at most 1GB'));

/** The largest request body of each body class of routes (src/http/intake/body-classes.ts); absent: that class's
 * default. Applied when the server starts (a reload does not change them). */
export const BodyLimitsSchema = z
  .object({
    /** Chat calls in every protocol, count_tokens included (default 8MB). */
    chat: ByteSize.optional(),
    /** Media task submissions: video, music, speech, voices, transcripts (default 32MB). */
    media: ByteSize.optional(),
    /** The MCP endpoint (default 1MB). */
    mcp: ByteSize.optional(),
    /** The admin API's JSON (default 8MB). */
    admin: ByteSize.optional(),
  })
  .strict();
export type BodyLimits = z.infer<typeof BodyLimitsSchema>;

/** Account holders' own sign-up (issue 34; docs/console.md). Read on every sign-up, so a reload
 * switches it off or on at once. */
export const SignupSchema = z
  .object({
    /** Default false: accounts are opened by the operator only. */
    enabled: z.boolean().default(false),
    /** The trial credit granted once the email address is verified (the spec's 40.44). */
    grant_usd: UsdString.refine((text) => /[1-9]/.test(text), 'the trial grant must be above 0').default('40.44'),
    /** Default true: no sign-in and no grant before the address is verified. */
    require_email_verification: z.boolean().default(true),
    /** Sign-up attempts per client address per hour (default 5). */
    per_ip_per_hour: z.number().int().positive().max(10_000).default(5),
    /** Sign-up attempts per email address per hour (default 3). */
    per_email_per_hour: z.number().int().positive().max(10_000).default(3),
  })
  .strict();
export type SignupConfig = z.infer<typeof SignupSchema>;
export const SIGNUP_DEFAULTS: SignupConfig = SignupSchema.parse({});

export const ConfigSchema = z
  .object({
    channels: z.array(ChannelSchema).default([]),
    models: z.array(ModelSchema).default([]),
    /** Discounts shared by several models; a model's own `discount` is looked at first. */
    discounts: z.array(SharedDiscountSchema).optional(),
    /** Absent: none. */
    presets: PresetsSchema.optional(),
    /** Absent: probing on, with the defaults. */
    media_probe: MediaProbeConfigSchema.optional(),
    /** Enterprise agents: the platform default model, the last fallback of an agent call's model
     * (after the agent's own and the enterprise's default; docs/agents.md). */
    agents: z.object({ default_model: z.string().min(1).optional() }).strict().optional(),
    /** Absent: the defaults (cool down after 3 failures in a row, 30 s doubling up to 30 min). */
    channel_health: ChannelHealthSchema.optional(),
    /** Absent: each body class's default body limit. */
    body_limits: BodyLimitsSchema.optional(),
    /** Absent: sign-up off (SIGNUP_DEFAULTS). */
    signup: SignupSchema.optional(),
  })
  .strict()
  .superRefine((config, ctx) => {
    const seen = new Map<string, string>();
    const claim = (name: string, owner: string, path: (string | number)[]) => {
      const prior = seen.get(name);
      if (prior !== undefined) ctx.addIssue({ code: 'custom', path, message: `"${name}" is used by both ${prior} and ${owner}` });
      else seen.set(name, owner);
    };
    config.models.forEach((m, i) => {
      claim(m.id, `model ${m.id}`, ['models', i, 'id']);
      m.aliases.forEach((a, j) => claim(a, `an alias of ${m.id}`, ['models', i, 'aliases', j]));
    });
    config.discounts?.forEach((d, i) => {
      d.models?.forEach((id, j) => {
        if (!config.models.some((m) => m.id === id))
          ctx.addIssue({ code: 'custom', path: ['discounts', i, 'models', j], message: `discount names unknown model ${id} (use canonical ids)` });
      });
    });
    const agentDefault = config.agents?.default_model;
    if (agentDefault !== undefined && !config.models.some((m) => m.id === agentDefault || m.aliases.includes(agentDefault)))
      ctx.addIssue({ code: 'custom', path: ['agents', 'default_model'], message: `unknown model ${agentDefault}` });
    for (const problem of fallbackProblems(config.models)) ctx.addIssue({ code: 'custom', path: ['models', problem.index, 'fallbacks'], message: problem.message });
    const channelIds = new Set<string>();
    config.channels.forEach((c, i) => {
      if (channelIds.has(c.id)) ctx.addIssue({ code: 'custom', path: ['channels', i, 'id'], message: `duplicate channel id ${c.id}` });
      channelIds.add(c.id);
      if (c.path_template !== undefined && !(CHAT_PROTOCOLS as readonly string[]).includes(c.protocol))
        ctx.addIssue({ code: 'custom', path: ['channels', i, 'path_template'], message: `path_template is for chat channels; a ${c.protocol} channel speaks several paths (use base_url and query)` });
      const publicIds = Array.isArray(c.models) ? c.models : Object.keys(c.models);
      publicIds.forEach((id) => {
        if (!config.models.some((m) => m.id === id))
          ctx.addIssue({ code: 'custom', path: ['channels', i, 'models'], message: `channel ${c.id} serves unknown model ${id} (use canonical ids)` });
      });
    });
  });

export type GatewayConfig = z.infer<typeof ConfigSchema>;
export type ChannelConfig = z.infer<typeof ChannelSchema>;
export type ModelConfig = z.infer<typeof ModelSchema>;
