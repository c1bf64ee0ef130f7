import { describe, expect, it } from 'vitest';
import { followed, type RecordedChange } from './follow';
import { FRESH_STATE, type ChannelState } from './health';

const change = (status: RecordedChange['status'], cause: string, reason = 'why'): RecordedChange => ({ channelId: 'c', status, cause, reason, changedAt: 1_800_000_000 });
const disabled = (by: 'operator' | 'credentials'): ChannelState => ({ ...FRESH_STATE, status: 'disabled', disabledBy: by });
const cooling: ChannelState = { ...FRESH_STATE, status: 'cooling', coolingUntil: Date.now() + 60_000, failuresInRow: 3, cooldowns: 1 };

describe('followed: what an instance takes over from the channel changes other instances recorded', () => {
  it('takes an operator disable over any local state, a credentials disable over a usable channel', () => {
    expect(followed(FRESH_STATE, change('disabled', 'operator'), 15_000)).toMatchObject({ status: 'disabled', disabledBy: 'operator', coolingUntil: null });
    expect(followed(cooling, change('disabled', 'operator'), 15_000)).toMatchObject({ status: 'disabled', disabledBy: 'operator' });
    expect(followed(disabled('credentials'), change('disabled', 'operator'), 15_000)).toMatchObject({ disabledBy: 'operator' });
    expect(followed(FRESH_STATE, change('disabled', 'credentials', 'HTTP 401: bad key'), 15_000)).toMatchObject({
      status: 'disabled',
      disabledBy: 'credentials',
      lastError: 'HTTP 401: bad key',
      lastErrorAt: 1_800_000_000_000,
      // Retried here too, a retry after the other instance's disable.
      probeAt: 1_800_000_015_000,
    });
    expect(followed(FRESH_STATE, change('disabled', 'operator'), 15_000)).toMatchObject({ probeAt: null });
  });

  it('changes nothing already so, and never weakens an operator disable into a credentials one', () => {
    expect(followed(disabled('operator'), change('disabled', 'operator'), 15_000)).toBeNull();
    expect(followed(disabled('credentials'), change('disabled', 'credentials'), 15_000)).toBeNull();
    expect(followed(disabled('operator'), change('disabled', 'credentials'), 15_000)).toBeNull();
  });

  it("ends a disable on an operator's enable or a probe's success; a probe does not lift an operator's disable", () => {
    expect(followed(disabled('operator'), change('healthy', 'operator'), 15_000)).toMatchObject({ status: 'healthy', disabledBy: null, failuresInRow: 0 });
    expect(followed(disabled('credentials'), change('healthy', 'probe'), 15_000)).toMatchObject({ status: 'healthy', disabledBy: null });
    expect(followed(disabled('operator'), change('healthy', 'probe'), 15_000)).toBeNull();
    expect(followed(FRESH_STATE, change('healthy', 'operator'), 15_000)).toBeNull();
  });

  it("leaves cooldowns and recoveries of another instance's own attempts to each instance", () => {
    expect(followed(FRESH_STATE, change('cooling', 'failures'), 15_000)).toBeNull();
    expect(followed(cooling, change('healthy', 'success'), 15_000)).toBeNull();
    expect(followed(disabled('credentials'), change('healthy', 'success'), 15_000)).toBeNull();
  });
});
