import type { UrlProbe } from '../../probe/port';
import { checkMedia, type MediaRule } from '../../probe/rules';

/** A public http(s) link with a host: what the spec's digital-human fields take (no data URIs, no uploads). */
export function isWebUrl(text: string): boolean {
  if (!/^https?:\/\//i.test(text)) return false;
  try {
    return new URL(text).hostname !== '';
  } catch {
    return false;
  }
}

/**
 * What the probe says of a URL a body names, before any money moves: a message (the 400) when it must
 * not be fetched (a private address, refused by the config) or breaks `rule`; null when it passes, or
 * when nothing could be learnt (the upstream decides then).
 */
export async function mediaRefusal(probe: UrlProbe, field: string, url: string, rule: MediaRule): Promise<string | null> {
  const probed = await probe.probe(url);
  if (probed.kind === 'refused') return `${field}: ${probed.message}`;
  if (probed.kind === 'unprobed') return null;
  const broken = checkMedia(probed.facts, rule);
  return broken === null ? null : `${field}: ${broken}`;
}

/** The first refusal of several probes run together (a motion transfer's images and its video). */
export async function firstRefusal(checks: ReadonlyArray<Promise<string | null>>): Promise<string | null> {
  for (const refusal of await Promise.all(checks)) if (refusal !== null) return refusal;
  return null;
}
