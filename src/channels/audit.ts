import { randomUUID } from 'node:crypto';
import { ChannelStateChanged, channelStream } from '../events/catalog';
import type { EventStore } from '../events/store/port';
import type { ChannelBoard } from './board';
import { FRESH_STATE } from './health';

/**
 * Every change of a channel's status appended to its stream (`ChannelStateChanged`), for the audit trail and
 * the `channels` projection. Appended in the background, in order per channel: a failed append is told, and
 * the live state stays as it is.
 */
export function auditChannelChanges(board: ChannelBoard, store: EventStore, onError: (error: unknown, channelId: string) => void): { idle(): Promise<void> } {
  let queue: Promise<unknown> = Promise.resolve();
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
    queue = queue.then(() => store.append(channelStream(channelId), [event], 'any').catch((error: unknown) => onError(error, channelId)));
  });
  return { idle: () => queue.then(() => undefined) };
}

/**
 * At start: a channel whose last recorded change disabled it (an operator, or its credentials refused) starts
 * disabled again, so that a restart does not send calls to it. Read from each channel's own stream (the
 * projection may still be catching up).
 */
export async function restoreDisabled(board: ChannelBoard, store: EventStore, channels: readonly { id: string }[]): Promise<void> {
  for (const channel of channels) {
    const [last] = await store.readStream(channelStream(channel.id), { direction: 'backwards', maxCount: 1 });
    if (last?.type !== ChannelStateChanged.type) continue;
    const change = ChannelStateChanged.schema.parse(last.data);
    if (change.to !== 'disabled') continue;
    board.restore(channel.id, {
      ...FRESH_STATE,
      status: 'disabled',
      disabledBy: change.cause === 'operator' ? 'operator' : 'credentials',
      lastError: change.cause === 'operator' ? null : change.reason,
      lastErrorAt: change.cause === 'operator' ? null : change.at * 1000,
    });
  }
}
