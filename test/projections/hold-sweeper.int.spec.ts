import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredHolds } from '../../src/jobs/hold-sweeper';
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

  it('writes the call-log row of a call that died with its gateway: error gateway_interrupted, its model and key, cost 0', async () => {
    const { accountId, keyId } = await t.accountWithKey();
    const ledger = t.gateway.ledger;
    const origin = { model: 'gpt-4o-mini', endpoint: 'chat-completions', requestId: 'req_died' };
    expect((await ledger.reserve(accountId, { holdId: 'req_died', amount: parseUsd('1'), keyId, purpose: 'chat gpt-4o-mini', ttlSeconds: 10, origin })).ok).toBe(true);
    // A hold reserved before reservations named their call: its purpose says what it was for.
    expect((await ledger.reserve(accountId, { holdId: 'req_older', amount: parseUsd('1'), keyId, purpose: 'chat gpt-4o', ttlSeconds: 10 })).ok).toBe(true);
    await t.gateway.runner.catchUpToHead();
    const submitted = clock;
    clock += 11;
    expect(await sweepExpiredHolds(t.db.sql, ledger, clock)).toBe(2);
    await t.gateway.runner.catchUpToHead();

    const logs = (await t.admin('GET', `/accounts/${accountId}/logs`)).json().data as Array<Record<string, unknown>>;
    expect(logs).toHaveLength(2);
    const byRequest = Object.fromEntries(logs.map((row) => [row.request_id, row]));
    for (const [requestId, model] of [['req_died', 'gpt-4o-mini'], ['req_older', 'gpt-4o']] as const)
      expect(byRequest[requestId]).toMatchObject({ status: 'error', error_code: 'gateway_interrupted', model, cost_usd: '0.00', key_name: 'test key', submitted_at: submitted });
    const rows = await t.db.sql.query<{ request_id: string; endpoint: string }>('SELECT request_id, endpoint FROM call_log WHERE account_id = $1 ORDER BY request_id', [accountId]);
    expect(rows).toEqual([
      { request_id: 'req_died', endpoint: 'chat-completions' },
      { request_id: 'req_older', endpoint: 'chat' },
    ]);
    expect((await ledger.wallet(accountId)).balance).toBe(parseUsd('40.44'));
  });
});
