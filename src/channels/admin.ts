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
}
