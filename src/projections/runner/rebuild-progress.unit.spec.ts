import { describe, expect, it } from 'vitest';
import { finalLine, progressLine } from './rebuild-progress';

const at = (prepare: bigint) => ({ commit: prepare, prepare });

describe('rebuild progress', () => {
  it('tells events done, the share of the log passed, the rate and the time left', () => {
    expect(progressLine({ events: 100_000, at: at(100_000n), head: at(400_000n) }, 2000)).toBe('100,000 events, 25%, 50,000 events/s, 6 s left');
    expect(progressLine({ events: 10, at: at(10n), head: at(1000n) }, 10_000)).toBe('10 events, 1%, 1 events/s, 16 min 30 s left');
  });

  it('ends with the whole count, the time and the rate', () => {
    expect(finalLine(['accounts', 'ledger'], 348_650, 6_973)).toBe('rebuilt accounts, ledger: 348,650 events in 7.0 s (50,000 events/s)');
  });
});
