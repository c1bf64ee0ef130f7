import { describe, expect, it } from 'vitest';
import { RefusalBudget } from './refusal-budget';

describe('refusal budget', () => {
  it('records up to the budget per account, then counts and reports once a minute', () => {
    const budget = new RefusalBudget({ perMinute: 3 });
    const answers = Array.from({ length: 6 }, () => budget.take('a', 0));
    expect(answers.map((a) => a.record)).toEqual([true, true, true, false, false, false]);
    // The first refusal past the budget reports (1), the next ones within the minute do not.
    expect(answers.slice(3)).toEqual([
      { record: false, report: 1 },
      { record: false, report: 0 },
      { record: false, report: 0 },
    ]);
    // Another account has its own budget.
    expect(budget.take('b', 0).record).toBe(true);
  });

  it('says whether a refusal would be recorded without taking from the budget', () => {
    const budget = new RefusalBudget({ perMinute: 60 });
    expect(budget.wouldRecord('a', 0)).toBe(true);
    for (let i = 0; i < 60; i++) expect([budget.wouldRecord('a', 0), budget.take('a', 0).record]).toEqual([true, true]);
    expect(budget.wouldRecord('a', 0)).toBe(false);
    expect(budget.wouldRecord('a', 999)).toBe(false);
    expect(budget.wouldRecord('a', 1000)).toBe(true);
    expect(budget.take('a', 1000).record).toBe(true);
  });

  it('refills evenly over the minute, and reports what was left unrecorded since the last report', () => {
    const budget = new RefusalBudget({ perMinute: 60 });
    for (let i = 0; i < 60; i++) expect(budget.take('a', 0).record).toBe(true);
    expect(budget.take('a', 0)).toEqual({ record: false, report: 1 });
    expect(budget.take('a', 0)).toEqual({ record: false, report: 0 });
    expect(budget.take('a', 0)).toEqual({ record: false, report: 0 });
    expect(budget.take('a', 1000).record).toBe(true); // one a second comes back
    expect(budget.take('a', 1000)).toEqual({ record: false, report: 0 });
    for (let i = 0; i < 59; i++) expect(budget.take('a', 60_000).record).toBe(true);
    // A minute after the first report: the three unrecorded since, and this one.
    expect(budget.take('a', 60_000)).toEqual({ record: false, report: 4 });
  });

  it('tracks a bounded number of accounts, forgetting those with a full bucket first', () => {
    const budget = new RefusalBudget({ perMinute: 2, maxAccounts: 2 });
    budget.take('busy', 0);
    budget.take('busy', 0);
    budget.take('idle', 0);
    // A minute later "idle" is full again and forgotten; "busy" keeps what it spent since.
    budget.take('busy', 60_000);
    budget.take('busy', 60_000);
    budget.take('new', 60_000);
    expect(budget.take('busy', 60_000).record).toBe(false);
    expect(budget.take('idle', 60_000).record).toBe(true);
  });
});
