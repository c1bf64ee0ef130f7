import { z } from 'zod';
import { ChannelGroup, Timestamp, Units, defineEvent, type EventOf } from './codec';

/** The stream of one API key: `key-{keyId}`. Events carry the key's id, prefix and
 * SHA-256 hash, never the raw key (that lives encrypted in the key vault). */
export const keyStream = (keyId: string) => `key-${keyId}`;

export const KeySettings = z.object({
  name: z.string(),
  allowed_models: z.array(z.string()).nullable(),
  expires_at: Timestamp.nullable(),
  enabled: z.boolean(),
  spend_cap: Units.nullable(),
  /** The channel group the key's calls are routed to (src/channels/groups.ts); null or absent: the
   * account's group, or every channel. Absent from events written before groups. */
  group: ChannelGroup.nullable().optional(),
});
export type KeySettings = z.output<typeof KeySettings>;

export const KeyIssued = defineEvent(
  'KeyIssued',
  KeySettings.extend({
    key_id: z.string(),
    account_id: z.string(),
    prefix: z.string(),
    hash: z.string().regex(/^[0-9a-f]{64}$/),
    revealable: z.boolean(),
    at: Timestamp,
    /** An agent key: the one enterprise agent it is bound to (the account is the enterprise). */
    agent_id: z.string().optional(),
    /** Who issued it (an enterprise admin), or approved the request it came from. */
    issued_by: z.string().optional(),
    /** The key request it came from (an escrow key). */
    request_id: z.string().optional(),
  }),
);
export const KeyUpdated = defineEvent(
  'KeyUpdated',
  z.object({ changes: KeySettings.partial(), at: Timestamp }),
);
export const KeyRevealed = defineEvent('KeyRevealed', z.object({ actor: z.string(), at: Timestamp }));
export const KeyRevoked = defineEvent('KeyRevoked', z.object({ reason: z.string(), at: Timestamp }));
export const KeyDeleted = defineEvent('KeyDeleted', z.object({ at: Timestamp }));

export const keyEvents = [KeyIssued, KeyUpdated, KeyRevealed, KeyRevoked, KeyDeleted] as const;

export type KeyEvent = EventOf<(typeof keyEvents)[number]>;
