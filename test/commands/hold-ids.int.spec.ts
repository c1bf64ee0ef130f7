import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ledger, ReserveRequest } from '../../src/commands/ledger';
import { parseUsd } from '../../src/money/usd';
import { ledgerTestbed, type LedgerTestbed } from '../support/ledger';

// A hold ends exactly once, and its id never opens a second hold. The wallet's state remembers
// only the holds closed lately; the event log remembers every reservation (its event id is derived
// from the hold id), and the ledger turns a reservation the log already has into `hold_exists`
// whenever its hold is not open.

let t: LedgerTestbed;
let ledger: Ledger;
beforeAll(async () => {
  t = await ledgerTestbed();
  ledger = t.ledger();
});
afterAll(() => t.db.drop());

const hold = (holdId: string): ReserveRequest => ({ holdId, amount: parseUsd('1'), keyId: null, spendCap: null, purpose: 'test', ttlSeconds: 60 });

describe('hold ids', () => {
  it('a retried reservation of an open hold is the same hold; of a closed hold, hold_exists', async () => {
    const opened = await ledger.openAccount('hold-ids');
    if (!opened.ok) throw new Error(opened.error.message);
    const { accountId } = opened;

    expect((await ledger.reserve(accountId, hold('h-1'))).ok).toBe(true);
    // The same reservation again while the hold is open: an idempotent retry, nothing new held.
    const retried = await ledger.reserve(accountId, hold('h-1'));
    expect(retried.ok && retried.state.held).toBe(parseUsd('1'));

    expect((await ledger.settle(accountId, 'h-1', parseUsd('0.25'))).ok).toBe(true);
    const reopened = await ledger.reserve(accountId, hold('h-1'));
    expect(!reopened.ok && reopened.error.code).toBe('hold_exists');
    const wallet = await ledger.wallet(accountId);
    expect(wallet.held).toBe(0n);
    expect(wallet.balance).toBe(parseUsd('40.44') - parseUsd('0.25'));
  });
});
