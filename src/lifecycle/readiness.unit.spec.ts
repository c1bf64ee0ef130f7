import { afterEach, describe, expect, it, vi } from 'vitest';
import { NotReady, Readiness, type Check, type Part } from './readiness';

afterEach(() => {
  vi.useRealTimers();
});

/** A check whose answers the test gives: each run waits for `answer` to be called. */
function controlled(part: Part) {
  let runs = 0;
  let answer: (outcome: Error | null) => void = () => {};
  const check: Check = {
    part,
    run: () => {
      runs += 1;
      return new Promise<void>((resolve, reject) => {
        answer = (outcome) => (outcome ? reject(outcome) : resolve());
      });
    },
  };
  return { check, runs: () => runs, answer: (outcome: Error | null) => answer(outcome) };
}

const ok = (part: Part, details?: Record<string, unknown>): Check => ({ part, run: async () => details });
const failing = (part: Part, error: Error): Check => ({
  part,
  run: async () => {
    throw error;
  },
});

describe('Readiness', () => {
  it('is ready when every part answers, showing what the checks report', async () => {
    const readiness = new Readiness([ok('event_store'), ok('database'), ok('projections', { lag_s: 0.2 })], { draining: () => false, cacheMs: 0 });
    expect(await readiness.verdict()).toEqual({
      ready: true,
      report: { status: 'ready', failing: [], checks: { event_store: { status: 'ok' }, database: { status: 'ok' }, projections: { status: 'ok', lag_s: 0.2 } } },
    });
  });

  it('names the failing parts; a NotReady reason is shown, any other error is not (it is told to onChange once)', async () => {
    const told: Array<[Part, unknown]> = [];
    const secret = new Error('connect ECONNREFUSED 10.0.0.7:5432 (user gateway)');
    const readiness = new Readiness([ok('event_store'), failing('database', secret), failing('redis', new NotReady('Redis cannot be reached'))], {
      draining: () => false,
      cacheMs: 0,
      onChange: (part, error) => told.push([part, error]),
    });
    const first = await readiness.verdict();
    expect(first).toEqual({
      ready: false,
      report: {
        status: 'not_ready',
        failing: ['database', 'redis'],
        checks: {
          event_store: { status: 'ok' },
          database: { status: 'failing', error: 'failed (the gateway log has the error)' },
          redis: { status: 'failing', error: 'Redis cannot be reached' },
        },
      },
    });
    await readiness.verdict();
    expect(told).toEqual([
      ['database', secret],
      ['redis', new NotReady('Redis cannot be reached')],
    ]);
  });

  it('tells onChange when a failing part answers again', async () => {
    const told: Array<[Part, unknown]> = [];
    let down = true;
    const readiness = new Readiness(
      [
        {
          part: 'redis',
          run: async () => {
            if (down) throw new NotReady('down');
          },
        },
      ],
      { draining: () => false, cacheMs: 0, onChange: (part, error) => told.push([part, error]) },
    );
    expect((await readiness.verdict()).ready).toBe(false);
    down = false;
    expect((await readiness.verdict()).ready).toBe(true);
    expect(told).toEqual([
      ['redis', new NotReady('down')],
      ['redis', null],
    ]);
  });

  it('answers 503 within the time limit when a part hangs, and does not start a second check behind the hung one', async () => {
    vi.useFakeTimers();
    const database = controlled('database');
    const readiness = new Readiness([ok('event_store'), database.check], { draining: () => false, timeoutMs: 2_000, cacheMs: 0 });
    const first = readiness.verdict();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await first).toMatchObject({ ready: false, report: { failing: ['database'], checks: { database: { status: 'failing', error: 'no answer within 2 s' } } } });
    // Still hung: the next probe is answered at once, without another query piling up.
    let answered = false;
    const second = readiness.verdict().then((verdict) => {
      answered = true;
      return verdict;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(answered).toBe(true);
    expect((await second).report.failing).toEqual(['database']);
    expect(database.runs()).toBe(1);
    // It answers at last: the next probe runs a new check.
    database.answer(null);
    await vi.advanceTimersByTimeAsync(0);
    const third = readiness.verdict();
    await vi.advanceTimersByTimeAsync(0);
    database.answer(null);
    expect((await third).ready).toBe(true);
    expect(database.runs()).toBe(2);
  });

  it('reuses a verdict for the cache time, and shares one evaluation between probes that ask meanwhile', async () => {
    vi.useFakeTimers();
    let runs = 0;
    const readiness = new Readiness([{ part: 'database', run: async () => void (runs += 1) }], { draining: () => false, cacheMs: 1_000 });
    await Promise.all([readiness.verdict(), readiness.verdict(), readiness.verdict()]);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    await readiness.verdict();
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(2);
    await readiness.verdict();
    expect(runs).toBe(2);
  });

  it('is not ready at once when the gateway drains, whatever the cache holds, without running the checks', async () => {
    let draining = false;
    let runs = 0;
    const readiness = new Readiness([{ part: 'database', run: async () => void (runs += 1) }], { draining: () => draining, cacheMs: 60_000 });
    expect((await readiness.verdict()).ready).toBe(true);
    draining = true;
    expect(await readiness.verdict()).toEqual({
      ready: false,
      report: { status: 'shutting_down', failing: ['shutdown'], checks: { shutdown: { status: 'failing', error: 'the gateway is shutting down' } } },
    });
    expect(runs).toBe(1);
  });
});
