/**
 * Issue 31, item 2 elsewhere: a video asked for without a duration is billed on the upstream's length
 * past its 12 s reservation (spec), but never on a length beyond the longest a request may ask for (3600 s).
 */
import { describe, expect, it } from 'vitest';
import { initialTaskState, type TaskState } from '../../commands/task/decider';
import { videoDelivery } from './video';

const NOW = 1_700_000_000;
const task = (duration: number) => ({ id: 't', status: 'succeeded', content: { video_url: 'https://cdn.example/v.mp4' }, duration }) as never;
const state = (cap: boolean): TaskState => ({ ...initialTaskState, family: 'video', basis: 12_000, billing: { unit: 'millisecond', price: 100_000_000n, per: 1000, cap } });

describe('a delivered video', () => {
  it('without a duration asked for: its length beyond the 12 s reservation billed, up to 3600 s', () => {
    expect(videoDelivery(task(300), state(false), NOW)).toMatchObject({ units: 300_000 });
    expect(videoDelivery(task(1e9), state(false), NOW)).toMatchObject({ units: 3_600_000 });
  });

  it('with a duration asked for: its length as reported (the reservation caps the cost)', () => {
    expect(videoDelivery(task(20), state(true), NOW)).toMatchObject({ units: 20_000 });
  });
});
