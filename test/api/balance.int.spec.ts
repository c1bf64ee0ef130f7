import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/money/usd';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

const get = (url: string, key: string) => t.gateway.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });

async function spend(accountId: string, keyId: string, holdId: string, hold: string, actual: string) {
  const ledger = t.gateway.ledger;
  const reserved = await ledger.reserve(accountId, { holdId, amount: parseUsd(hold), keyId, purpose: 'test', ttlSeconds: 60 });
  if (!reserved.ok) return reserved;
  return ledger.settle(accountId, holdId, parseUsd(actual));
}

describe('GET /v1/key/balance', () => {
  it('reads 40.44 for a new account, as strings', async () => {
    const { key } = await t.accountWithKey();
    const response = await get('/v1/key/balance', key);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ object: 'key.balance', remaining_usd: '40.44', used_usd: '0.00', total_usd: '40.44', expires_at: null });
  });

  it('tracks this key only, and caps remaining by the spend cap', async () => {
    const { accountId, keyId, key } = await t.accountWithKey({ spend_cap_usd: '10', expires_at: 4_000_000_000 });
    const other = await t.admin('POST', `/accounts/${accountId}/keys`, { name: 'other' });
    expect((await spend(accountId, keyId, 'a', '2', '1.25')).ok).toBe(true);
    expect((await spend(accountId, other.json().id, 'b', '3', '3')).ok).toBe(true);
    // wallet 40.44 - 1.25 - 3 = 36.19; cap left 10 - 1.25 = 8.75
    expect((await get('/v1/key/balance', key)).json()).toEqual({
      object: 'key.balance',
      remaining_usd: '8.75',
      used_usd: '1.25',
      total_usd: '10.00',
      expires_at: 4_000_000_000,
    });
    expect((await get('/v1/key/balance', other.json().key)).json()).toMatchObject({ remaining_usd: '36.19', used_usd: '3.00', total_usd: '39.19' });

    // An open hold counts against both the wallet and the cap.
    const ledger = t.gateway.ledger;
    expect((await ledger.reserve(accountId, { holdId: 'c', amount: parseUsd('0.75'), keyId, purpose: 'test', ttlSeconds: 60 })).ok).toBe(true);
    expect((await get('/v1/key/balance', key)).json().remaining_usd).toBe('8.00');
    // The cap refuses a reservation past what is left of it.
    const refused = await ledger.reserve(accountId, { holdId: 'd', amount: parseUsd('8.01'), keyId, purpose: 'test', ttlSeconds: 60 });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error.code).toBe('spend_cap_exceeded');
  });

  it('floors remaining at 0 when the balance is negative', async () => {
    const { accountId, keyId, key } = await t.accountWithKey();
    expect((await spend(accountId, keyId, 'x', '40', '45.5')).ok).toBe(true);
    expect((await get('/v1/key/balance', key)).json()).toMatchObject({ remaining_usd: '0.00', used_usd: '45.50', total_usd: '45.50' });
  });
});

describe('billing-compatible endpoints', () => {
  it('follow the arithmetic rules, with and without /v1, identically', async () => {
    const { accountId, keyId, key } = await t.accountWithKey({ expires_at: 4_100_000_000 });
    expect((await spend(accountId, keyId, 'h', '5', '2.345678')).ok).toBe(true);
    const balance = (await get('/v1/key/balance', key)).json();
    const sub = await get('/v1/dashboard/billing/subscription', key);
    const usage = await get('/v1/dashboard/billing/usage?start_date=2024-01-01&end_date=2024-02-01', key);
    expect(sub.json()).toEqual({
      object: 'billing_subscription',
      has_payment_method: false,
      soft_limit_usd: Number(balance.total_usd),
      hard_limit_usd: Number(balance.total_usd),
      system_hard_limit_usd: Number(balance.total_usd),
      access_until: 4_100_000_000,
    });
    expect(usage.json()).toEqual({ object: 'list', total_usage: 234.5678, daily_costs: [] });
    expect(sub.json().hard_limit_usd - usage.json().total_usage / 100).toBeCloseTo(Number(balance.remaining_usd), 9);
    expect((await get('/dashboard/billing/subscription', key)).body).toBe(sub.body);
    expect((await get('/dashboard/billing/usage', key)).body).toBe(usage.body);
  });

  it('have no credit_grants (404)', async () => {
    const { key } = await t.accountWithKey();
    for (const url of ['/v1/dashboard/billing/credit_grants', '/dashboard/billing/credit_grants']) {
      const response = await get(url, key);
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('not_found');
    }
  });
});
