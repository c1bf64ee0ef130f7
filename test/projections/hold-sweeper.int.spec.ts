import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredHolds } from '../../src/commands/hold-sweeper';
import { parseUsd } from '../../src/money/usd';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
let clock = 1_800_000_000;
beforeAll(async () => {
  t = await startTestGateway({ now: () => clock });
});
afterAll(() => t.close());

describe('hold sweeper', () => {
  it('releases holds past their deadline, once, and leaves live and closed holds alone', async () => {
    const { accountId, keyId } = await t.accountWithKey();
    const ledger = t.gateway.ledger;
    const reserve = (holdId: string, ttlSeconds: number) =>
      ledger.reserve(accountId, { holdId, amount: parseUsd('1'), keyId, purpose: 'chat', ttlSeconds });
    expect((await reserve('dies', 10)).ok).toBe(true);
    expect((await reserve('lives', 1000)).ok).toBe(true);
    expect((await reserve('settled', 10)).ok).toBe(true);
    expect((await ledger.settle(accountId, 'settled', parseUsd('0.5'))).ok).toBe(true);
    await t.gateway.runner.catchUpToHead();

    clock += 11;
    expect(await sweepExpiredHolds(t.db.sql, ledger, clock)).toBe(1);
    await t.gateway.runner.catchUpToHead();
    expect(await sweepExpiredHolds(t.db.sql, ledger, clock)).toBe(0);

    const wallet = await ledger.wallet(accountId);
    expect([...wallet.holds.keys()]).toEqual(['lives']);
    expect(wallet.balance).toBe(parseUsd('39.94'));
    const rows = await t.db.sql.query<{ hold_id: string; status: string }>('SELECT hold_id, status FROM holds WHERE account_id = $1 ORDER BY hold_id', [accountId]);
    expect(rows).toEqual([
      { hold_id: 'dies', status: 'released' },
      { hold_id: 'lives', status: 'open' },
      { hold_id: 'settled', status: 'settled' },
    ]);
  });
});
