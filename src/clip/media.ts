import type { Probe, UrlProbe } from '../probe/port';
import { checkMedia, CLIP_LIMITS, MATERIAL_IMAGE_SECONDS, MATERIALS_MAX_SECONDS, type MediaRule } from '../probe/rules';
import { urlsOf, type ClipBody } from './fields';

// The spec's "Media limits for clip inputs" applied to a clip body: which limit each URL answers to
// (pure), the probes (concurrent, within one time budget), and the verdict (pure).

/** All of a body's probes end within this, whatever each URL's own limit: what is not known by then is
 * passed on, as an unprobed URL is. */
export const CLIP_PROBE_BUDGET_MS = 5000;

export interface MediaCheck {
  /** Where the URL sits in the body, as the 400 names it. */
  readonly field: string;
  readonly url: string;
  readonly rule: MediaRule;
  /** A material, for the materials' total. */
  readonly material?: 'image' | 'video';
}

export function mediaChecks(body: ClipBody): MediaCheck[] {
  return urlsOf(body).map(({ field, url, limit }) => ({
    field,
    url,
    rule: CLIP_LIMITS[limit],
    ...(limit === 'materialImage' ? { material: 'image' as const } : limit === 'materialVideo' ? { material: 'video' as const } : {}),
  }));
}

/**
 * The first limit broken, as the 400's message, or null. A refused URL (a private address, not http(s))
 * is a 400; an unprobed one passes, and so does whatever a probe could not learn. The materials' total
 * counts each image 2 s and each video its probed length (unknown: 0, the upstream decides).
 */
export function judgeMedia(checks: readonly MediaCheck[], probes: ReadonlyMap<string, Probe>): string | null {
  let total = 0;
  for (const check of checks) {
    const probe = probes.get(check.url);
    if (check.material === 'image') total += MATERIAL_IMAGE_SECONDS;
    if (!probe || probe.kind === 'unprobed') continue;
    if (probe.kind === 'refused') return `${check.field}: ${probe.message}`;
    const broken = checkMedia(probe.facts, check.rule);
    if (broken) return `${check.field}: ${broken}`;
    if (check.material === 'video') total += probe.facts.durationS ?? 0;
  }
  if (total > MATERIALS_MAX_SECONDS)
    return `materials: together at most ${MATERIALS_MAX_SECONDS} s (each image counts ${MATERIAL_IMAGE_SECONDS} s, each video its length); these come to ${Math.round(total * 10) / 10} s`;
  return null;
}

/** Each distinct URL probed once, all at the same time; any probe still running after `budgetMs` counts as unprobed. */
export async function probeAll(probe: UrlProbe, urls: readonly string[], budgetMs = CLIP_PROBE_BUDGET_MS): Promise<Map<string, Probe>> {
  const distinct = [...new Set(urls)];
  let timer: NodeJS.Timeout | undefined;
  const late: Probe = { kind: 'unprobed', reason: `not probed within ${budgetMs} ms` };
  const outOfTime = new Promise<Probe>((resolve) => (timer = setTimeout(() => resolve(late), budgetMs)));
  try {
    const results = await Promise.all(
      distinct.map((url) => Promise.race([probe.probe(url).catch((error: unknown): Probe => ({ kind: 'unprobed', reason: String(error) })), outOfTime])),
    );
    return new Map(distinct.map((url, i) => [url, results[i]!]));
  } finally {
    clearTimeout(timer);
  }
}
