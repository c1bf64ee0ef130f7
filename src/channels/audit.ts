import { randomUUID } from 'node:crypto';
import { ChannelStateChanged, channelStream } from '../events/catalog';
import type { EventStore } from '../events/store/port';
import type { ChannelBoard } from './board';
import { FRESH_STATE, credentialsRetryOf } from './health';

/**
 * Every change of a channel's status appended to its stream (`ChannelStateChanged`), for the audit trail and
 * the `channels` projection. Appended in the background, in order per channel: a failed append is told, and
 * the live state stays as it is.
 */
export interface ChannelAudit {
  /** Resolves once every change told so far has been appended (or has failed to be). */
  idle(): Promise<void>;
  /** Whether a change of this channel is still waiting for its append (the log is behind this instance). */
  pending(channelId: string): boolean;
  /** Whether this instance appended the event (ChannelFollower leaves its own changes alone). */
  isOwn(eventId: string): boolean;
}

/** How many of its own change events an instance remembers: far more than change in one follow interval. */
const OWN_EVENTS_KEPT = 1_000;

export function auditChannelChanges(board: ChannelBoard, store: EventStore, onError: (error: unknown, channelId: string) => void): ChannelAudit {
  let queue: Promise<unknown> = Promise.resolve();
  const waiting = new Map<string, number>();
  const own = new Set<string>();
  board.onChange((channelId, change) => {
    const at = Math.floor(Date.now() / 1000);
    const data = {
      channel_id: channelId,
      from: change.from,
      to: change.to,
      cause: change.cause,
      reason: change.reason.slice(0, 2000),
      until: change.until === null ? null : Math.ceil(change.until / 1000),
      at,
    };
    const event = { id: randomUUID(), type: ChannelStateChanged.type, data, metadata: change.cause === 'operator' ? { actor: 'admin' } : {} };
    waiting.set(channelId, (waiting.get(channelId) ?? 0) + 1);
    own.add(event.id);
    if (own.size > OWN_EVENTS_KEPT) own.delete(own.values().next().value as string);
    queue = queue.then(() =>
      store
        .append(channelStream(channelId), [event], 'any')
        .catch((error: unknown) => onError(error, channelId))
        .finally(() => {
          const left = (waiting.get(channelId) ?? 1) - 1;
          if (left > 0) waiting.set(channelId, left);
          else waiting.delete(channelId);
        }),
    );
  });
  return {
    idle: () => queue.then(() => undefined),
    pending: (channelId) => waiting.has(channelId),
    isOwn: (eventId) => own.has(eventId),
  };
}

/**
 * At start: a channel whose last recorded change disabled it (an operator, or its credentials refused) starts
 * disabled again, so that a restart does not send calls to it; one disabled for its credentials is probed
 * again a retry after its disable (at once when that is past). Read from each channel's own stream (the
 * projection may still be catching up).
 */
export async function restoreDisabled(board: ChannelBoard, store: EventStore, channels: readonly { id: string }[]): Promise<void> {
  for (const channel of channels) {
    const [last] = await store.readStream(channelStream(channel.id), { direction: 'backwards', maxCount: 1 });
    if (last?.type !== ChannelStateChanged.type) continue;
    const change = ChannelStateChanged.schema.parse(last.data);
    if (change.to !== 'disabled') continue;
    const operator = change.cause === 'operator';
    board.restore(channel.id, {
      ...FRESH_STATE,
      status: 'disabled',
      disabledBy: operator ? 'operator' : 'credentials',
      refusals: operator ? 0 : 1,
      probeAt: operator ? null : change.at * 1000 + credentialsRetryOf(board.healthPolicy, 1),
      lastError: operator ? null : change.reason,
      lastErrorAt: operator ? null : change.at * 1000,
    });
  }
}
