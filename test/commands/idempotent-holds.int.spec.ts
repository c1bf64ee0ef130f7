import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOSED_HOLD_GENERATION, wasClosed } from '../../src/commands/wallet/state';
import type { IdempotentReserve, Ledger, ReserveRequest } from '../../src/commands/ledger';
import { parseUsd } from '../../src/money/usd';
import { ledgerTestbed, type LedgerTestbed } from '../support/ledger';

// Idempotency inside the ledger: the hold of a call under an Idempotency-Key is named by the key's
// run (stream idempotent-call-{digest}), so a run is billed once whatever became of the
// `idempotency_keys` row, and for as long as the key's retention lasts, whatever the wallet remembers.

const NOW = 1_700_000_000;
const WEEK = 7 * 24 * 3600;
let t: LedgerTestbed;
let clock = NOW;
let ledger: Ledger;
beforeAll(async () => {
  t = await ledgerTestbed();
  ledger = t.ledger({ now: () => clock });
});
afterAll(() => t.db.drop());

const hold: Omit<ReserveRequest, 'holdId'> = { amount: parseUsd('1'), keyId: null, spendCap: null, purpose: 'images.generations img', ttlSeconds: 60 };
const under = (key: string, fingerprint = 'fp-1', requestId = 'req_1'): IdempotentReserve => ({ key, fingerprint, requestId, retentionSeconds: WEEK });

async function account(name: string) {
  const opened = await ledger.openAccount(name);
  if (!opened.ok) throw new Error(opened.error.message);
  return opened.accountId;
}

async function run(accountId: string, key: string, fingerprint = 'fp-1', requestId = 'req_1') {
  return ledger.reserveIdempotent(accountId, hold, under(key, fingerprint, requestId));
}

describe('idempotent holds', () => {
  it('bills a run once: in flight while its hold is open, billed once settled, another body refused', async () => {
    const accountId = await account('idem-once');
    const first = await run(accountId, 'k-1');
    if (!first.ok) throw new Error(first.error.message);
    expect(first.holdId).toMatch(/^idem_[0-9a-f]{32}_0$/);

    const concurrent = await run(accountId, 'k-1', 'fp-1', 'req_2');
    expect(!concurrent.ok && concurrent.error).toMatchObject({ code: 'idempotency_in_flight', requestId: 'req_1' });

    expect((await ledger.settle(accountId, first.holdId, parseUsd('1'))).ok).toBe(true);
    const retried = await run(accountId, 'k-1', 'fp-1', 'req_3');
    expect(!retried.ok && retried.error).toMatchObject({ code: 'idempotency_billed', requestId: 'req_1' });
    const other = await run(accountId, 'k-1', 'fp-2', 'req_4');
    expect(!other.ok && other.error.code).toBe('idempotency_key_reuse');

    const wallet = await ledger.wallet(accountId);
    expect(wallet.captured).toBe(parseUsd('1'));
    expect(wallet.held).toBe(0n);
  });

  it('frees the key after a release (nothing billed): the next run has a new hold, any body', async () => {
    const accountId = await account('idem-release');
    const first = await run(accountId, 'k-1');
    if (!first.ok) throw new Error(first.error.message);
    expect((await ledger.release(accountId, first.holdId, 'upstream failed')).ok).toBe(true);
    const second = await run(accountId, 'k-1', 'fp-other', 'req_2');
    if (!second.ok) throw new Error(second.error.message);
    expect(second.holdId).toMatch(/_1$/);
  });

  it('resumes a run whose hold was refused (402): the same hold id, nothing billed before', async () => {
    const accountId = await account('idem-402');
    const tooMuch = await ledger.reserveIdempotent(accountId, { ...hold, amount: parseUsd('100') }, under('k-1'));
    expect(!tooMuch.ok && tooMuch.error.code).toBe('insufficient_funds');
    const affordable = await run(accountId, 'k-1');
    expect(affordable.ok && affordable.holdId).toMatch(/_0$/);
  });

  it('keys are per account: the same key in two accounts is two runs', async () => {
    const a = await run(await account('idem-a'), 'shared');
    const b = await run(await account('idem-b'), 'shared');
    expect(a.ok && b.ok).toBe(true);
    expect(a.ok && b.ok && a.holdId !== b.holdId).toBe(true);
  });

  it('still refuses a billed run after the wallet forgot its hold, on a cold ledger, until retention passes', async () => {
    const accountId = await account('idem-forgotten');
    const first = await run(accountId, 'k-1');
    if (!first.ok) throw new Error(first.error.message);
    expect((await ledger.settle(accountId, first.holdId, parseUsd('0.01'))).ok).toBe(true);
    // Two generations of other closed holds: the wallet's state no longer remembers this one.
    const small = { ...hold, amount: 1n };
    const churn = Array.from({ length: 2 * CLOSED_HOLD_GENERATION + 1 }, (_, i) => `churn-${i}`);
    await Promise.all(churn.map((holdId) => ledger.reserve(accountId, { ...small, holdId })));
    await Promise.all(churn.map((holdId) => ledger.release(accountId, holdId, 'test')));
    const cold = t.ledger({ now: () => clock });
    expect(wasClosed(await cold.wallet(accountId), first.holdId)).toBe(false);

    const retried = await cold.reserveIdempotent(accountId, hold, under('k-1', 'fp-1', 'req_9'));
    expect(!retried.ok && retried.error.code).toBe('idempotency_billed');
    expect((await cold.wallet(accountId)).captured).toBe(parseUsd('0.01'));

    // Past the spec's 7 days the key counts as new: a new run, a new hold.
    clock = NOW + WEEK;
    const later = await cold.reserveIdempotent(accountId, hold, under('k-1', 'fp-1', 'req_10'));
    clock = NOW;
    expect(later.ok && later.holdId).toMatch(/_1$/);
  });
});
