import { z } from 'zod';
import type { MediaProbeResult, UrlProbe } from './port';
import { checkMedia, type MediaRule } from './rules';
import { firstRefusedUrl } from './url-policy';

// A request's media URLs checked before any money moves: every URL probed at once within one time budget,
// then the first limit broken as the 400's message. Used by avatars, digital humans and smart clip.

/** A public http(s) link with a host: what the spec's media fields take (no data URIs, no uploads). */
export function isWebUrl(text: string): boolean {
  if (!/^https?:\/\//i.test(text)) return false;
  try {
    return new URL(text).hostname !== '';
  } catch {
    return false;
  }
}

/** A body field holding such a link. */
export const WebUrl = z.string().min(1).max(4096).refine(isWebUrl, 'must be a public http(s) URL');

/** All of a request's probes end within this, whatever each URL's own limit: what is not known by then is
 * passed on, as an unprobed URL is. */
export const PROBE_BUDGET_MS = 5000;

export interface MediaCheck {
  /** Where the URL sits in the body, as the 400 names it. */
  readonly field: string;
  readonly url: string;
  readonly rule: MediaRule;
}

/** Each distinct URL probed once, all at the same time; any probe still running after `budgetMs` counts as unprobed. */
export async function probeMediaUrls(probe: UrlProbe, urls: readonly string[], budgetMs = PROBE_BUDGET_MS): Promise<Map<string, MediaProbeResult>> {
  const distinct = [...new Set(urls)];
  let timer: NodeJS.Timeout | undefined;
  const late: MediaProbeResult = { kind: 'unprobed', reason: `not probed within ${budgetMs} ms` };
  const outOfTime = new Promise<MediaProbeResult>((resolve) => (timer = setTimeout(() => resolve(late), budgetMs)));
  try {
    const results = await Promise.all(
      distinct.map((url) => Promise.race([probe.probe(url).catch((error: unknown): MediaProbeResult => ({ kind: 'unprobed', reason: String(error) })), outOfTime])),
    );
    return new Map(distinct.map((url, i) => [url, results[i]!]));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The first check whose URL must not be fetched (a private address) or whose probed file breaks its rule,
 * as the 400's message; null when all pass. An unprobed URL passes, and so does whatever a probe could not
 * learn: the upstream decides.
 */
export function firstBroken(checks: readonly MediaCheck[], probes: ReadonlyMap<string, MediaProbeResult>): string | null {
  for (const check of checks) {
    const probe = probes.get(check.url);
    if (!probe || probe.kind === 'unprobed') continue;
    if (probe.kind === 'refused') return `${check.field}: ${probe.message}`;
    const broken = checkMedia(probe.facts, check.rule);
    if (broken) return `${check.field}: ${broken}`;
  }
  return null;
}

/** The checks probed (at once, within the budget) and judged: the 400's message, or null. */
export async function mediaRefusal(probe: UrlProbe, checks: readonly MediaCheck[]): Promise<string | null> {
  // The URL policy first: it holds when probing is off too.
  return (await urlRefusal(probe, checks)) ?? firstBroken(checks, await probeMediaUrls(probe, checks.map((c) => c.url)));
}

/** The URL policy (src/media-check/url-policy.ts) on URLs the gateway passes on unprobed: the first refused one
 * as the 400's message (`field: why`), or null. */
export function urlRefusal(probe: UrlProbe, urls: readonly { readonly field: string; readonly url: string }[]): Promise<string | null> {
  const admit = probe.admit?.bind(probe);
  return admit ? firstRefusedUrl(admit, urls) : Promise.resolve(null);
}
