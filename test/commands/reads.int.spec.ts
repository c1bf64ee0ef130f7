import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandHandler } from '../../src/commands/handle-command';
import { SIGNUP_GRANT, walletDecider } from '../../src/commands/wallet/decider';
import { walletStream } from '../../src/events/catalog';
import { ledgerTestbed, storeWith, type LedgerTestbed } from '../support/ledger';

// A cached state that goes stale under load has every request in flight asking for it at once:
// the reads queued together on a stream share one read forward.

let t: LedgerTestbed;
beforeAll(async () => {
  t = await ledgerTestbed();
});
afterAll(() => t.db.drop());

describe('reads of a stream', () => {
  it('queued together, share one read of the log and all get the state after the commands before them', async () => {
    let reads = 0;
    const counted = storeWith(t.store, {
      readStream: (...args) => {
        reads++;
        return t.store.readStream(...args);
      },
    });
    const wallets = new CommandHandler(counted, walletDecider);
    const stream = walletStream('acct_reads');
    expect((await wallets.handle(stream, { type: 'OpenAccount', accountId: 'acct_reads', name: 'reads', trialGrant: SIGNUP_GRANT, now: 1 })).ok).toBe(true);
    reads = 0;
    const topUp = wallets.handle(stream, { type: 'TopUp', topupId: 't1', amount: 200_000_000_000n, reference: 'r', now: 1 });
    const loads = Array.from({ length: 20 }, () => wallets.load(stream));
    const states = await Promise.all(loads);
    expect((await topUp).ok).toBe(true);
    // One read forward for the twenty (the top-up before them needed none: the cache was current).
    expect(reads).toBe(1);
    for (const loaded of states) expect(loaded.state.credited).toBe(40_440_000_000n + 200_000_000_000n);
  });
});
