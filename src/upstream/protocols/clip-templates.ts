/**
 * Clip templates from the upstream of the `clip-*` channels (DESIGN.md, "Media, digital humans and agents:
 * the fixed parts"): `GET {base}/api/v3/clip-templates?scene=…` → `{templates: [{id, title, cover_url,
 * has_title, has_persona}]}`; `GET …/clip-templates/{id}` → the template with its canvas and layers.
 */
import { channelDispatcher, shapedHeaders, withChannelQuery } from '../shaping';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { ChannelConfig } from '../../config/schema';
import { BodyTooLargeError, textWithin } from '../bounded-body';
import { tryJson } from '../json';
import { scrubberOf } from '../scrub';
import { CallSignal, classify, statusFailure, upstreamAgent, upstreamTarget, type Failure } from '../upstream-call';

export const CLIP_TEMPLATES_PATH = '/api/v3/clip-templates';

/** A template list or a template's layers: a few kilobytes; anything much larger is not one. */
const TEMPLATE_ANSWER_BYTES = 2 * 1024 * 1024;

/** One template of a list; unknown fields are kept (the client gets the list as the upstream gives it). */
export const ClipTemplateSummary = z.looseObject({
  id: z.string().min(1),
  title: z.string().optional(),
  cover_url: z.string().optional(),
  has_title: z.boolean().optional(),
  has_persona: z.boolean().optional(),
});
export const ClipTemplateList = z.looseObject({ templates: z.array(ClipTemplateSummary) });
export type ClipTemplateList = z.output<typeof ClipTemplateList>;
/** One template with its canvas and layers (whatever structure the upstream gives them). */
export const ClipTemplate = ClipTemplateSummary.extend({ scene: z.string().optional(), canvas: z.unknown().optional(), layers: z.unknown().optional() });
export type ClipTemplate = z.output<typeof ClipTemplate>;

export type TemplateAnswer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: Failure };

async function getJson<T>(channel: ChannelConfig, path: string, schema: z.ZodType<T>, options: { timeoutMs: number; dispatcher?: Dispatcher }): Promise<TemplateAnswer<T>> {
  // Shaped by the channel's config (src/upstream/shaping.ts): query, auth header, extra headers, proxy.
  const target = upstreamTarget(channel.base_url, withChannelQuery(channel, path));
  const signal = new CallSignal(options.timeoutMs);
  try {
    const response = await (channelDispatcher(channel) ?? options.dispatcher ?? upstreamAgent).request({
      origin: target.origin,
      path: target.path,
      method: 'GET',
      headers: shapedHeaders(channel, { authorization: `Bearer ${channel.api_key}` }),
      signal: signal.signal,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    if (response.statusCode >= 400) return { ok: false, failure: await statusFailure(response.statusCode, response.headers, response.body, scrubberOf(channel)) };
    const parsed = schema.safeParse(tryJson(await textWithin(response.body, TEMPLATE_ANSWER_BYTES)));
    if (!parsed.success) return { ok: false, failure: { kind: 'unreachable', message: 'the upstream answered with something that is not a clip template answer' } };
    return { ok: true, value: parsed.data };
  } catch (error) {
    if (error instanceof BodyTooLargeError) return { ok: false, failure: { kind: 'unreachable', message: error.message } };
    return { ok: false, failure: classify(error, signal) };
  } finally {
    signal.clear();
  }
}

export function fetchClipTemplates(channel: ChannelConfig, scene: string, options: { timeoutMs: number; dispatcher?: Dispatcher }): Promise<TemplateAnswer<ClipTemplateList>> {
  return getJson(channel, `${CLIP_TEMPLATES_PATH}?scene=${encodeURIComponent(scene)}`, ClipTemplateList, options);
}

export function fetchClipTemplate(channel: ChannelConfig, id: string, options: { timeoutMs: number; dispatcher?: Dispatcher }): Promise<TemplateAnswer<ClipTemplate>> {
  return getJson(channel, `${CLIP_TEMPLATES_PATH}/${encodeURIComponent(id)}`, ClipTemplate, options);
}
