import { describe, expect, it } from 'vitest';
import { channelStream } from '../../src/events/catalog';
import { channelsProjection } from '../../src/projections/channels/projection';
import { channelStates } from '../../src/projections/channels/queries';
import { projectionSpec, type GivenEvent } from './support';

const spec = projectionSpec([channelsProjection]);
const changed = (channelId: string, from: string, to: string, cause: string, reason: string, at: number): GivenEvent => ({
  stream: channelStream(channelId),
  type: 'ChannelStateChanged',
  data: { channel_id: channelId, from, to, cause, reason, until: null, at },
});

describe('channels/queries.ts', () => {
  it("channelStates: each channel's latest change; a channel that never changed has no row", async () => {
    await spec.given([
      changed('ch-a', 'healthy', 'cooling', 'failures', '3 failures in a row', 1000),
      changed('ch-b', 'healthy', 'disabled', 'operator', 'maintenance', 1001),
      changed('ch-a', 'cooling', 'healthy', 'probe', 'probe answered', 1002),
    ]);
    const states = await channelStates(spec.sql);
    expect(states.sort((x, y) => x.channelId.localeCompare(y.channelId))).toEqual([
      { channelId: 'ch-a', status: 'healthy', cause: 'probe', reason: 'probe answered', changedAt: 1002 },
      { channelId: 'ch-b', status: 'disabled', cause: 'operator', reason: 'maintenance', changedAt: 1001 },
    ]);
    await spec.replayGivesSameRows();
  });
});
