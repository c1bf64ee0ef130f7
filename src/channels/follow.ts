import type { Sql } from '../storage/sql';
import type { ChannelAudit } from './audit';
import type { ChannelBoard } from './board';
import { FRESH_STATE, credentialsRetryOf, type ChannelState, type ChannelStatus } from './health';

/**
 * Instances share one log: a channel an operator disables or enables on one instance, or whose
 * credentials one instance found refused or a probe found good again, is recorded there
 * (`ChannelStateChanged`), and the `channels` projection keeps each channel's latest change in
 * `channel_states`. Every instance reads that table every CHANNEL_FOLLOW_MS and takes over the
 * changes that are not its own passive health: disables (operator, credentials) and what ends them
 * (an operator's enable, a probe's success). Cooldowns stay each instance's own (what one instance's
 * attempts saw is not proof for the others), and so do the counters.
 */
export const CHANNEL_FOLLOW_MS = 2_000;

/** A row of `channel_states`: the latest recorded change of a channel. */
export interface RecordedChange {
  readonly channelId: string;
  readonly status: ChannelStatus;
  readonly cause: string;
  readonly reason: string;
  /** Unix seconds. */
  readonly changedAt: number;
}

/**
 * What this instance does with a channel's latest recorded change: the state to take, or null (nothing
 * to take: already so, or a change that is each instance's own). Pure.
 */
export function followed(local: ChannelState, change: RecordedChange, credentialsRetryMs: number): ChannelState | null {
  if (change.status === 'disabled' && (change.cause === 'operator' || change.cause === 'credentials')) {
    const by = change.cause;
    if (local.status === 'disabled' && (local.disabledBy === by || local.disabledBy === 'operator')) return null;
    return {
      ...local,
      status: 'disabled',
      disabledBy: by,
      coolingUntil: null,
      // Probed here too on the retries' backoff: the instance that disabled it may be gone.
      ...(by === 'credentials'
        ? { lastError: change.reason, lastErrorAt: change.changedAt * 1000, refusals: 1, probeAt: change.changedAt * 1000 + credentialsRetryMs }
        : { probeAt: null }),
    };
  }
  if (change.status === 'healthy' && (change.cause === 'operator' || change.cause === 'probe')) {
    if (local.status !== 'disabled') return null;
    // A probe's success does not lift an operator's disable (as on the instance that probed).
    if (change.cause === 'probe' && local.disabledBy === 'operator') return null;
    return { ...local, status: 'healthy', disabledBy: null, coolingUntil: null, failuresInRow: 0, runAccounts: [], cooldowns: FRESH_STATE.cooldowns, refusals: 0, probeAt: null };
  }
  return null;
}

/**
 * Polls `channel_states` and applies what `followed` says to the board, silently (the change is in the
 * log already). Only changes recorded after the previous poll are looked at, and only other instances':
 * the first poll takes note of what is there (the start restored disabled channels from the log itself),
 * an event this instance appended is skipped, and so is a channel whose own latest change is not in the
 * log yet (the table's row is older than this instance's state then). The projection applies a channel's
 * changes in its stream's order, so a row newer than this instance's last own change is a later decision.
 */
export class ChannelFollower {
  private seen = new Map<string, string>();
  private primed = false;

  constructor(
    private readonly board: ChannelBoard,
    private readonly sql: Sql,
    private readonly audit: Pick<ChannelAudit, 'pending' | 'isOwn'>,
  ) {}

  async poll(): Promise<number> {
    const rows = await this.sql.query<{ channel_id: string; status: ChannelStatus; cause: string; reason: string; changed_at: string; event_id: string | null }>(
      'SELECT channel_id, status, cause, reason, changed_at::text AS changed_at, event_id::text AS event_id FROM channel_states',
    );
    let applied = 0;
    for (const row of rows) {
      // A change of this instance's own still on its way to the log is newer than whatever the table
      // says: look again at the next poll.
      if (this.audit.pending(row.channel_id)) continue;
      const mark = row.event_id ?? `${row.changed_at}|${row.status}|${row.cause}|${row.reason}`;
      if (this.seen.get(row.channel_id) === mark) continue;
      this.seen.set(row.channel_id, mark);
      // Its own changes are what this instance's board already holds (or has moved past since).
      if (!this.primed || (row.event_id !== null && this.audit.isOwn(row.event_id))) continue;
      const change = { channelId: row.channel_id, status: row.status, cause: row.cause, reason: row.reason, changedAt: Number(row.changed_at) };
      const next = followed(this.board.state(row.channel_id), change, credentialsRetryOf(this.board.healthPolicy, 1));
      if (next) {
        this.board.restore(row.channel_id, next);
        applied += 1;
      }
    }
    this.primed = true;
    return applied;
  }
}
