import { describe, expect, it } from 'vitest';
import { AVATAR, FAMILIES, IMAGE, isFinished, isInFlight, MUSIC, SPEECH, statusFilter, TRANSCRIPT, VIDEO, VOICE, type FamilyRules, type Phase } from './families';

const PHASES: readonly Phase[] = ['created', 'queued', 'running', 'succeeded', 'failed', 'expired', 'cancelled', 'refused'];

const statusesOf = (family: FamilyRules) => Object.fromEntries(PHASES.map((phase) => [phase, family.statusOf(phase)]));

describe("each family's status of each phase, as the spec names them", () => {
  it('video (and transcripts, named like it): queued, running, succeeded, failed, expired, cancelled', () => {
    const expected = { created: 'queued', queued: 'queued', running: 'running', succeeded: 'succeeded', failed: 'failed', expired: 'expired', cancelled: 'cancelled', refused: 'failed' };
    expect(statusesOf(VIDEO)).toEqual(expected);
    expect(statusesOf(TRANSCRIPT)).toEqual(expected);
  });

  it('image: queued, running, succeeded, failed; expired and cancelled show as failed', () => {
    expect(statusesOf(IMAGE)).toEqual({ created: 'queued', queued: 'queued', running: 'running', succeeded: 'succeeded', failed: 'failed', expired: 'failed', cancelled: 'failed', refused: 'failed' });
  });

  it('music: processing while in flight, then succeeded, failed, expired, cancelled', () => {
    expect(statusesOf(MUSIC)).toEqual({ created: 'processing', queued: 'processing', running: 'processing', succeeded: 'succeeded', failed: 'failed', expired: 'expired', cancelled: 'cancelled', refused: 'failed' });
  });

  it('speech: pending while in flight, then succeeded or failed', () => {
    expect(statusesOf(SPEECH)).toEqual({ created: 'pending', queued: 'pending', running: 'pending', succeeded: 'succeeded', failed: 'failed', expired: 'failed', cancelled: 'failed', refused: 'failed' });
  });

  it('voice clone: pending, then ready or failed', () => {
    expect(statusesOf(VOICE)).toEqual({ created: 'pending', queued: 'pending', running: 'pending', succeeded: 'ready', failed: 'failed', expired: 'failed', cancelled: 'failed', refused: 'failed' });
  });

  it('avatar: pending while the upstream creates it, then ready or failed (expired and cancelled too)', () => {
    expect(statusesOf(AVATAR)).toEqual({ created: 'pending', queued: 'pending', running: 'pending', succeeded: 'ready', failed: 'failed', expired: 'failed', cancelled: 'failed', refused: 'failed' });
  });

  it('every family shows each phase as one of its own statuses, in flight as in flight', () => {
    for (const family of Object.values(FAMILIES)) {
      for (const phase of PHASES) expect(family.statuses, `${family.family} ${phase}`).toContain(family.statusOf(phase));
      // Its first status is the one of a task just created: the submission's answer.
      expect(family.statusOf('created')).toBe(family.statuses[0]);
      expect(family.groups.all).toEqual(family.statuses);
    }
  });

  it('says who runs each family: the upstream (polled by a job) or the gateway itself (a transcript: its own request)', () => {
    expect(Object.fromEntries(Object.values(FAMILIES).map((f) => [f.family, f.runs]))).toEqual({
      video: 'upstream',
      music: 'upstream',
      transcript: 'gateway',
      image: 'gateway',
      speech: 'gateway',
      voice: 'gateway',
      avatar: 'upstream',
    });
  });

  it('tells phases in flight from finished ones', () => {
    expect(PHASES.filter(isInFlight)).toEqual(['created', 'queued', 'running']);
    expect(PHASES.filter(isFinished)).toEqual(['succeeded', 'failed', 'expired', 'cancelled', 'refused']);
    expect(isInFlight('none')).toBe(false);
    expect(isFinished('none')).toBe(false);
  });
});

describe('statusFilter: a list query as a set of statuses', () => {
  it('is every status when absent, empty or blank', () => {
    for (const query of [undefined, '', '   ']) expect(statusFilter(VIDEO, query)).toEqual(VIDEO.statuses);
  });

  it('takes one status or a comma-separated list (spaces allowed, repeats once)', () => {
    expect(statusFilter(VIDEO, 'succeeded')).toEqual(['succeeded']);
    expect(statusFilter(VIDEO, 'failed, succeeded')).toEqual(['failed', 'succeeded']);
    expect(statusFilter(VIDEO, 'queued,queued')).toEqual(['queued']);
    expect(statusFilter(MUSIC, 'processing')).toEqual(['processing']);
    expect(statusFilter(VOICE, 'ready,failed')).toEqual(['ready', 'failed']);
  });

  it('takes `all`, and the groups of the family (images: in_flight)', () => {
    expect(statusFilter(VIDEO, 'all')).toEqual(VIDEO.statuses);
    expect(statusFilter(SPEECH, 'all')).toEqual(['pending', 'succeeded', 'failed']);
    expect(statusFilter(IMAGE, 'in_flight')).toEqual(['queued', 'running']);
    expect(statusFilter(IMAGE, 'in_flight,failed')).toEqual(['queued', 'running', 'failed']);
    expect(statusFilter(IMAGE, 'all,queued')).toEqual(IMAGE.statuses);
  });

  it('is null (the caller answers 400) for a word that is not a status or group of the family', () => {
    expect(statusFilter(VIDEO, 'done')).toBeNull();
    expect(statusFilter(VIDEO, 'succeeded,done')).toBeNull();
    expect(statusFilter(VIDEO, 'SUCCEEDED')).toBeNull();
    // Another family's words are not this one's.
    expect(statusFilter(VIDEO, 'in_flight')).toBeNull();
    expect(statusFilter(VIDEO, 'processing')).toBeNull();
    expect(statusFilter(IMAGE, 'expired')).toBeNull();
    expect(statusFilter(SPEECH, 'queued')).toBeNull();
    expect(statusFilter(VOICE, 'succeeded')).toBeNull();
  });
});
