import type { ChannelConfig } from '../config/schema';

/** What the group of a call depends on: its key's settings and its account's wallet. */
export interface GroupedCaller {
  readonly key: { readonly settings: { readonly group?: string | null | undefined }; readonly agentId?: string | null };
  readonly wallet: { readonly group: string | null };
}

/**
 * The channel group a caller's calls are routed to: the key's own group wins over its account's; null
 * when neither is bound, and then every channel serves the call (as before groups: an operator who
 * never binds a group sees no change). An agent key routes as its enterprise account: a group set on
 * the key itself is not looked at.
 */
export function callerGroup(caller: GroupedCaller | null | undefined): string | null {
  if (!caller) return null;
  if (caller.key.agentId) return caller.wallet.group;
  return caller.key.settings.group ?? caller.wallet.group ?? null;
}

/** Whether a channel serves a caller of `group` (null: any channel). */
export const inGroup = (channel: ChannelConfig, group: string | null): boolean => group === null || channel.group === group;
