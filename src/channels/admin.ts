import type { ChannelConfig } from '../config/schema';
import type { ChannelBoard } from './board';

/** What the admin API needs of channel health (src/http/admin/channels.ts). */
export interface ChannelHealthAdmin {
  readonly board: ChannelBoard;
  /** The channels of the config in force. */
  channels(): readonly ChannelConfig[];
  /** Resolves once every state change so far is in the log. */
  idle(): Promise<void>;
  /** One active probe now. */
  probe(channel: ChannelConfig): Promise<'ok' | 'failed' | 'skipped'>;
  /** Re-reads, validates and applies the config file. */
  reload(trigger: 'sighup' | 'admin'): Promise<ReloadOutcome>;
}

/** The outcome of a configuration reload (POST /admin/v1/config/reload, SIGHUP). */
export type ReloadOutcome = { ok: true; digest: string; path: string; channels: number; models: number } | { ok: false; errors: string };
