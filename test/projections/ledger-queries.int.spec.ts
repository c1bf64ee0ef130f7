import { describe, expect, it } from 'vitest';
import { ledgerProjection } from '../../src/projections/ledger/projection';
import { callLedger, credits } from '../../src/projections/ledger/queries';
import { call, projectionSpec, wallet } from './support';

const spec = projectionSpec([ledgerProjection]);
const USD = 1_000_000_000n;

describe('ledger/queries.ts', () => {
  it("credits: an account's grants and top-ups newest first, its holds and other accounts' left out, at most `limit`", async () => {
    await spec.given([
      wallet.opened('acct_a', 1000),
      wallet.granted('acct_a', 40n * USD, 1000),
      wallet.toppedUp('acct_a', 10n * USD, 'invoice 1', 1001),
      wallet.reserved('acct_a', 'hold-1', USD, null, 1002),
      wallet.toppedUp('acct_a', 20n * USD, 'invoice 2', 1003),
      wallet.opened('acct_b', 1004),
      wallet.toppedUp('acct_b', 99n * USD, 'theirs', 1004),
    ]);
    expect(await credits(spec.sql, 'acct_a')).toEqual([
      { type: 'topup', amount: 20n * USD, reference: 'invoice 2', at: 1003 },
      { type: 'topup', amount: 10n * USD, reference: 'invoice 1', at: 1001 },
      { type: 'grant', amount: 40n * USD, reference: 'signup', at: 1000 },
    ]);
    expect((await credits(spec.sql, 'acct_a', 1)).map((c) => c.reference)).toEqual(['invoice 2']);
    await spec.replayGivesSameRows();
  });

  it("callLedger: a call's hold and capture with the running balance, found by the id of the event that wrote its row; nothing for a rejected call", async () => {
    const recorded = await spec.given([
      wallet.opened('acct_a', 1000),
      wallet.granted('acct_a', 10n * USD, 1000),
      wallet.reserved('acct_a', 'hold-1', 3n * USD, 'key_1', 1001),
      wallet.reserved('acct_a', 'hold-2', USD, 'key_1', 1002),
      wallet.settled('acct_a', 'hold-1', 3n * USD, 2n * USD, 1003, call('req-1', 'key_1', 'chat-model', 'success', 1001)),
      { stream: 'wallet-acct_a', type: 'CallRejected', data: { call: call('req-2', 'key_1', 'chat-model', 'rejected', 1004), at: 1004 } },
    ]);
    const settledCall = recorded[4]!.id;
    expect(await callLedger(spec.sql, 'acct_a', settledCall)).toEqual([
      { seq: 2, type: 'hold', amount: 3n * USD, balanceAfter: 10n * USD, heldAfter: 3n * USD, reference: 'chat', at: 1001 },
      { seq: 4, type: 'capture', amount: 2n * USD, balanceAfter: 8n * USD, heldAfter: USD, reference: null, at: 1003 },
    ]);
    expect(await callLedger(spec.sql, 'acct_a', recorded[5]!.id)).toEqual([]);
    // Another account's view of the same call: nothing.
    expect(await callLedger(spec.sql, 'acct_b', settledCall)).toEqual([]);
    await spec.replayGivesSameRows();
  });
});
