import { z } from 'zod';
import type { ChannelConfig } from '../../../config/schema';
import { VIDEO_LIFETIME_S } from './video-standard';

// What the digital-human SKUs (dh-avatar, dh-lipsync, dh-motion) share: `duration` is required and only
// the reservation's basis; the task is settled on the seconds the upstream delivers, never above the
// reservation (the spec: "the reservation caps the cost").

/** The longest `duration` a call may reserve for, in seconds. */
export const DH_MAX_SECONDS = 3600;
/** How long a digital-human task may run before the gateway expires it (refunded). */
export const DH_LIFETIME_S = VIDEO_LIFETIME_S;

const codePoints = (s: string) => [...s].length;

/** A string of at most `max` characters (code points, as the spec counts them). */
export const upTo = (max: number) => z.string().refine((s) => codePoints(s) <= max, `must be at most ${max} characters`);

export const DhDuration = z
  .number({ error: (issue) => (issue.input === undefined ? 'required: the seconds the reservation is based on' : 'must be a number of seconds') })
  .positive()
  .max(DH_MAX_SECONDS)
  .describe('Required: the seconds the reservation is based on. Settlement uses the delivered seconds, capped by the reservation.');

const originOf = (url: string): string | null => {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

/**
 * Only the video channels of the upstream(s) that hold the call's references (an avatar, a cloned voice):
 * such a reference means nothing to another upstream. Absent when nothing is held anywhere (presets).
 */
export function sameUpstreamAs(holders: ReadonlyArray<ChannelConfig | null>): ((channel: ChannelConfig) => boolean) | undefined {
  const origins = [...new Set(holders.flatMap((c) => (c ? [originOf(c.base_url)] : [])))];
  if (origins.length === 0) return undefined;
  return (channel) => origins.every((origin) => originOf(channel.base_url) === origin);
}
