import type { SqlQuery } from '../../storage/sql';

/** The read side of `channel_states` for the admin API: each channel's latest recorded change.
 * (src/channels/follow.ts polls the same table for its instances' board.) */

export interface ChannelStateRow {
  readonly channelId: string;
  readonly status: string;
  readonly cause: string;
  readonly reason: string;
  readonly changedAt: number;
}

/** Every channel's latest recorded change (a channel that never changed has no row). */
export async function channelStates(sql: SqlQuery): Promise<ChannelStateRow[]> {
  const rows = await sql.query<{ channel_id: string; status: string; cause: string; reason: string; changed_at: string | number }>(
    'SELECT channel_id, status, cause, reason, changed_at FROM channel_states',
  );
  return rows.map((r) => ({ channelId: r.channel_id, status: r.status, cause: r.cause, reason: r.reason, changedAt: Number(r.changed_at) }));
}
