import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walletStream } from '../../src/events/catalog';
import { startTestGateway, type TestGateway } from '../support/gateway';

// Issue 21, item 16: a payment webhook retried after a time-out must not credit twice; the admin
// API's POSTs take an Idempotency-Key.

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

const post = (path: string, body: unknown, key?: string) =>
  t.gateway.app.inject({
    method: 'POST',
    url: `/admin/v1${path}`,
    headers: { authorization: 'Bearer test-admin-token', ...(key !== undefined ? { 'idempotency-key': key } : {}) },
    payload: body as object,
  });

async function topUpEvents(accountId: string) {
  const events = await t.gateway.storage.store.readStream(walletStream(accountId));
  return events.filter((e) => e.type === 'WalletToppedUp');
}

describe('top-ups are idempotent by reference within an account', () => {
  it('the same reference and amount credit once and answer with the first top-up', async () => {
    const { accountId } = await t.accountWithKey();
    const first = await post(`/accounts/${accountId}/topups`, { amount_usd: '200.00', reference: 'pay_123' });
    expect(first.statusCode).toBe(201);
    const retry = await post(`/accounts/${accountId}/topups`, { amount_usd: '200', reference: 'pay_123' });
    expect(retry.statusCode).toBe(201);
    expect(retry.json().topup_id).toBe(first.json().topup_id);
    expect(retry.json().amount_usd).toBe('200.00');
    expect(retry.json().account.balance_usd).toBe('240.44');
    expect(await topUpEvents(accountId)).toHaveLength(1);

    // The reference is per account: another account may use it.
    const other = await t.accountWithKey();
    expect((await post(`/accounts/${other.accountId}/topups`, { amount_usd: '200', reference: 'pay_123' })).json().account.balance_usd).toBe('240.44');
  });

  it('refuses the same reference with another amount: 409, nothing credited', async () => {
    const { accountId } = await t.accountWithKey();
    expect((await post(`/accounts/${accountId}/topups`, { amount_usd: '150', reference: 'inv-9' })).statusCode).toBe(201);
    const conflict = await post(`/accounts/${accountId}/topups`, { amount_usd: '300', reference: 'inv-9' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error).toMatchObject({ code: 'topup_reference_conflict' });
    expect(conflict.json().error.message).toContain('150.00');
    expect((await t.admin('GET', `/accounts/${accountId}`)).json().balance_usd).toBe('190.44');
  });

  it('concurrent retries of one top-up credit it once', async () => {
    const { accountId } = await t.accountWithKey();
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(`/accounts/${accountId}/topups`, { amount_usd: '134.80', reference: 'hook-1' })));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(6).fill(201));
    expect(new Set(answers.map((a) => a.json().topup_id)).size).toBe(1);
    expect(await topUpEvents(accountId)).toHaveLength(1);
    expect((await t.admin('GET', `/accounts/${accountId}`)).json().balance_usd).toBe('175.24');
  });
});

describe('Idempotency-Key on admin POSTs', () => {
  it('runs an account creation once and replays its answer', async () => {
    const before = (await t.admin('GET', '/accounts?limit=1000')).json().data.length as number;
    const first = await post('/accounts', { name: 'Webhook Ltd' }, 'create-webhook-ltd');
    expect(first.statusCode).toBe(201);
    const again = await post('/accounts', { name: 'Webhook Ltd' }, 'create-webhook-ltd');
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect((await t.admin('GET', '/accounts?limit=1000')).json().data.length).toBe(before + 1);

    const reused = await post('/accounts', { name: 'Someone Else' }, 'create-webhook-ltd');
    expect(reused.statusCode).toBe(409);
    expect(reused.json().error.code).toBe('idempotency_key_reuse');
    const invalid = await post('/accounts', { name: 'x' }, 'has space');
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().error.code).toBe('invalid_idempotency_key');
  });

  it('a refused request frees its key', async () => {
    const { accountId } = await t.accountWithKey();
    const small = await post(`/accounts/${accountId}/topups`, { amount_usd: '10', reference: 'r-1' }, 'topup-r-1');
    expect(small.statusCode).toBe(400);
    const retried = await post(`/accounts/${accountId}/topups`, { amount_usd: '10', reference: 'r-1' }, 'topup-r-1');
    expect(retried.statusCode).toBe(400);
    expect(retried.headers['idempotency-replayed']).toBeUndefined();
  });

  it('replays a key creation with the same key, which the idempotency store never holds', async () => {
    const { accountId } = await t.accountWithKey();
    const first = await post(`/accounts/${accountId}/keys`, { name: 'ci' }, 'issue-ci-key');
    expect(first.statusCode).toBe(201);
    const raw = first.json().key as string;
    expect(raw).toMatch(/^sk-/);
    const again = await post(`/accounts/${accountId}/keys`, { name: 'ci' }, 'issue-ci-key');
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    const keys = (await t.admin('GET', `/accounts/${accountId}/keys`)).json().data as Array<{ name: string }>;
    expect(keys.filter((k) => k.name === 'ci')).toHaveLength(1);
    const stored = await t.db.sql.query<{ body: string }>(`SELECT convert_from(body, 'UTF8') AS body FROM idempotency_keys WHERE idem_key = 'issue-ci-key'`);
    expect(stored).toHaveLength(1);
    expect(stored[0]!.body).not.toContain(raw);

    // Deleted since: the key cannot be given again.
    expect((await t.admin('DELETE', `/keys/${first.json().id}`)).statusCode).toBe(200);
    const gone = await post(`/accounts/${accountId}/keys`, { name: 'ci' }, 'issue-ci-key');
    expect(gone.statusCode).toBe(409);
    expect(gone.json().error.code).toBe('idempotency_response_not_cached');
  });
});
