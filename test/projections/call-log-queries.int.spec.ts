import { describe, expect, it } from 'vitest';
import { callLogProjection } from '../../src/projections/call-log/projection';
import { dailyUsage } from '../../src/projections/call-log/queries';
import { call, projectionSpec, wallet } from './support';

const spec = projectionSpec([callLogProjection]);
const DAY = 86_400;
const START = 20_000 * DAY; // 2024-10-04T00:00:00Z

describe('call-log/queries.ts', () => {
  it('dailyUsage: calls and cost per UTC day and model over [from, to), rejected calls counted at no cost', async () => {
    await spec.given([
      wallet.settled('acct_a', 'hold-1', 100n, 70n, START + 10, call('req-1', 'key_1', 'model-b', 'success', START + 5)),
      wallet.settled('acct_a', 'hold-2', 100n, 30n, START + 20, call('req-2', 'key_1', 'model-a', 'success', START + 15)),
      wallet.released('acct_a', 'hold-3', 100n, START + 30, call('req-3', 'key_1', 'model-b', 'error', START + 25)),
      wallet.settled('acct_a', 'hold-4', 100n, 5n, START + DAY + 1, call('req-4', 'key_1', 'model-b', 'success', START + DAY)),
      { stream: 'wallet-acct_a', type: 'CallRejected', data: { call: call('req-5', 'key_1', 'model-b', 'rejected', START + DAY + 2), at: START + DAY + 2 } },
      // Outside the window, and another account's.
      wallet.settled('acct_a', 'hold-6', 100n, 9n, START + 2 * DAY, call('req-6', 'key_1', 'model-b', 'success', START + 2 * DAY)),
      wallet.settled('acct_b', 'hold-1', 100n, 50n, START + 10, call('req-7', 'key_2', 'model-b', 'success', START + 5)),
    ]);
    expect(await dailyUsage(spec.sql, 'acct_a', START, START + 2 * DAY)).toEqual([
      { day: '2024-10-04', model: 'model-a', requests: 1, cost: 30n },
      { day: '2024-10-04', model: 'model-b', requests: 2, cost: 70n },
      { day: '2024-10-05', model: 'model-b', requests: 2, cost: 5n },
    ]);
    await spec.replayGivesSameRows();
  });
});
