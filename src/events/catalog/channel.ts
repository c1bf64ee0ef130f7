import { z } from 'zod';
import { Int32, Timestamp, defineEvent, type EventOf } from './codec';

/** The stream of one upstream channel's state changes: `channel-{channelId}`. */
export const channelStream = (channelId: string) => `channel-${channelId}`;

/** The stream of the gateway's applied configurations (start and reloads). */
export const GATEWAY_CONFIG_STREAM = 'gateway-config';

const ChannelStatus = z.enum(['healthy', 'cooling', 'disabled']);

/** A channel left or came back (src/channels/health.ts): why, and until when it cools down. */
export const ChannelStateChanged = defineEvent(
  'ChannelStateChanged',
  z.object({
    channel_id: z.string().min(1),
    from: ChannelStatus,
    to: ChannelStatus,
    cause: z.enum(['failures', 'credentials', 'success', 'probe', 'operator']),
    reason: z.string().max(2000),
    /** While cooling: until when (Unix seconds). */
    until: Timestamp.nullable(),
    at: Timestamp,
  }),
);

/** A configuration file was applied (at start or by a reload): its SHA-256 digest and what it holds. */
export const ConfigApplied = defineEvent(
  'ConfigApplied',
  z.object({
    digest: z.string().regex(/^[0-9a-f]{64}$/),
    /** `start`, `sighup` or `admin`. */
    trigger: z.enum(['start', 'sighup', 'admin']),
    path: z.string().max(4096),
    channels: Int32,
    models: Int32,
    at: Timestamp,
  }),
);

export const channelEvents = [ChannelStateChanged, ConfigApplied] as const;

export type ChannelEvent = EventOf<(typeof channelEvents)[number]>;
