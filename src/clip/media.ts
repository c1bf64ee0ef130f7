import { firstBroken, type MediaCheck } from '../media-check/checks';
import type { MediaProbeResult } from '../media-check/port';
import { CLIP_LIMITS, MATERIAL_IMAGE_SECONDS, MATERIALS_MAX_SECONDS } from '../media-check/rules';
import { urlsOf, type ClipBody } from './fields';

// The spec's "Media limits for clip inputs" applied to a clip body: which limit each URL answers to
// (pure), and the verdict (pure); the probes themselves: src/media-check/checks.ts.

export interface ClipMediaCheck extends MediaCheck {
  /** A material, for the materials' total. */
  readonly material?: 'image' | 'video';
}

export function mediaChecks(body: ClipBody): ClipMediaCheck[] {
  return urlsOf(body).map(({ field, url, limit }) => ({
    field,
    url,
    rule: CLIP_LIMITS[limit],
    ...(limit === 'materialImage' ? { material: 'image' as const } : limit === 'materialVideo' ? { material: 'video' as const } : {}),
  }));
}

/**
 * The first limit broken, as the 400's message, or null (src/media-check/checks.ts: a refused URL is a 400, an
 * unprobed one passes). Then the materials' total: each image 2 s, each video its probed length (unknown:
 * 0, the upstream decides).
 */
export function judgeMedia(checks: readonly ClipMediaCheck[], probes: ReadonlyMap<string, MediaProbeResult>): string | null {
  const broken = firstBroken(checks, probes);
  if (broken) return broken;
  let total = 0;
  for (const check of checks) {
    const probe = probes.get(check.url);
    if (check.material === 'image') total += MATERIAL_IMAGE_SECONDS;
    if (check.material === 'video' && probe?.kind === 'probed') total += probe.facts.durationS ?? 0;
  }
  if (total > MATERIALS_MAX_SECONDS)
    return `materials: together at most ${MATERIALS_MAX_SECONDS} s (each image counts ${MATERIAL_IMAGE_SECONDS} s, each video its length); these come to ${Math.round(total * 10) / 10} s`;
  return null;
}
