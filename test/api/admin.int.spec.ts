import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

describe('admin API', () => {
  it('requires the admin bearer token', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'test-admin-token' }]) {
      const response = await t.gateway.app.inject({ method: 'GET', url: '/admin/v1/accounts', headers });
      expect(response.statusCode).toBe(401);
      expect(response.json().error.code).toBe('unauthorized');
    }
  });

  it('opens an account with the 40.44 sign-up grant', async () => {
    const response = await t.admin('POST', '/accounts', { name: 'Ada' });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ name: 'Ada', status: 'active', balance_usd: '40.44', held_usd: '0.00', available_usd: '40.44' });
    const id = response.json().id;
    expect((await t.admin('GET', `/accounts/${id}`)).json().balance_usd).toBe('40.44');
    expect((await t.admin('GET', '/accounts')).json().data.map((a: { id: string }) => a.id)).toContain(id);
  });

  it('validates bodies with clear messages', async () => {
    const noName = await t.admin('POST', '/accounts', {});
    expect(noName.statusCode).toBe(400);
    expect(noName.json().error).toMatchObject({ code: 'invalid_request' });
    expect(noName.json().error.message).toMatch(/name/);
    const { accountId } = await t.accountWithKey();
    const float = await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: 200, reference: 'x' });
    expect(float.statusCode).toBe(400);
    const badModels = await t.admin('POST', `/accounts/${accountId}/keys`, { name: 'k', allowed_models: ['no-such-model'] });
    expect(badModels.statusCode).toBe(400);
    expect(badModels.json().error.message).toMatch(/no-such-model/);
    expect((await t.admin('GET', '/accounts/acct_missing')).statusCode).toBe(404);
    expect((await t.admin('POST', '/accounts/acct_missing/topups', { amount_usd: '200', reference: 'x' })).statusCode).toBe(404);
  });

  it('takes top-ups of at least 134.8 and refuses smaller ones with a clear message', async () => {
    const { accountId } = await t.accountWithKey();
    const small = await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '134.79', reference: 'inv-1' });
    expect(small.statusCode).toBe(400);
    expect(small.json().error).toMatchObject({ code: 'topup_below_minimum' });
    expect(small.json().error.message).toContain('134.80');
    const ok = await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '134.80', reference: 'inv-2' });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().account.balance_usd).toBe('175.24');
  });

  it('refuses amounts past what the ledger can hold with a 400, not a 500', async () => {
    const { accountId } = await t.accountWithKey();
    const huge = await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '10000000000', reference: 'typo' });
    expect(huge.statusCode).toBe(400);
    expect(huge.json().error.message).toContain('at most 1000000000 USD');
    const cap = await t.admin('POST', `/accounts/${accountId}/keys`, { name: 'k', spend_cap_usd: '99999999999' });
    expect(cap.statusCode).toBe(400);
    expect((await t.admin('GET', `/accounts/${accountId}`)).json().balance_usd).toBe('40.44');
  });

  it('sets limits and deactivates / reactivates', async () => {
    const { accountId } = await t.accountWithKey();
    const limits = await t.admin('PUT', `/accounts/${accountId}/limits`, { rpm: 60, concurrency: 5 });
    expect(limits.json().limits).toEqual({ rpm: 60, concurrency: 5 });
    expect((await t.admin('PUT', `/accounts/${accountId}/limits`, { rpm: 0, concurrency: null })).statusCode).toBe(400);
    expect((await t.admin('POST', `/accounts/${accountId}/deactivate`, {})).json().status).toBe('inactive');
    expect((await t.admin('POST', `/accounts/${accountId}/reactivate`, {})).json().status).toBe('active');
  });

  it('creates, lists, updates, reveals and deletes keys', async () => {
    const { accountId } = await t.accountWithKey();
    const created = await t.admin('POST', `/accounts/${accountId}/keys`, {
      name: 'ci',
      allowed_models: ['gpt-4o-mini'],
      expires_at: 4_000_000_000,
      spend_cap_usd: '5.5',
    });
    expect(created.statusCode).toBe(201);
    const key = created.json();
    expect(key.key).toMatch(/^sk-[A-Za-z0-9]{8}-[0-9a-f]{64}$/);
    expect(key.key).toHaveLength(76);
    expect(key.prefix).toBe(key.key.slice(0, 12));
    expect(key).toMatchObject({ name: 'ci', allowed_models: ['gpt-4o-mini'], expires_at: 4_000_000_000, spend_cap_usd: '5.50', enabled: true });

    const listed = (await t.admin('GET', `/accounts/${accountId}/keys`)).json().data;
    expect(listed.map((k: { id: string }) => k.id)).toContain(key.id);
    expect(JSON.stringify(listed)).not.toContain(key.key);

    const patched = await t.admin('PATCH', `/keys/${key.id}`, { name: 'ci-2', allowed_models: null, spend_cap_usd: null, enabled: false });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ name: 'ci-2', allowed_models: null, spend_cap_usd: null, enabled: false, expires_at: 4_000_000_000 });

    const revealed = await t.admin('GET', `/keys/${key.id}/reveal`);
    expect(revealed.json()).toEqual({ id: key.id, key: key.key });

    expect((await t.admin('DELETE', `/keys/${key.id}`)).json()).toEqual({ id: key.id, deleted: true });
    expect((await t.admin('GET', `/keys/${key.id}/reveal`)).statusCode).toBe(404);
    expect((await t.admin('PATCH', `/keys/${key.id}`, { name: 'x' })).statusCode).toBe(404);
    expect((await t.admin('GET', `/accounts/${accountId}/keys`)).json().data.map((k: { id: string }) => k.id)).not.toContain(key.id);
    // Deleting destroys the key material.
    expect(await t.db.sql.query('SELECT 1 FROM key_vault WHERE key_id = $1', [key.id])).toHaveLength(0);

    const audit = await t.db.sql.query<{ action: string }>('SELECT action FROM audit_trail WHERE subject_id = $1 ORDER BY at, action', [key.id]);
    expect(audit.map((a) => a.action).sort()).toEqual(['KeyDeleted', 'KeyIssued', 'KeyRevealed', 'KeyUpdated']);
  });

  it('returns the account ledger: its events in order', async () => {
    const { accountId } = await t.accountWithKey();
    await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '150', reference: 'inv-9' });
    const ledger = (await t.admin('GET', `/accounts/${accountId}/ledger`)).json();
    expect(ledger.data.map((e: { type: string }) => e.type)).toEqual(['AccountOpened', 'CreditGranted', 'WalletToppedUp']);
    expect(ledger.data.map((e: { revision: number }) => e.revision)).toEqual([0, 1, 2]);
    expect(ledger.data[2].data).toMatchObject({ amount: '150000000000', reference: 'inv-9' });
    const page = (await t.admin('GET', `/accounts/${accountId}/ledger?limit=2`)).json();
    expect(page.data).toHaveLength(2);
    expect(page.next_cursor).toBe('2');
    expect((await t.admin('GET', `/accounts/${accountId}/ledger?from_revision=2`)).json().data[0].type).toBe('WalletToppedUp');
  });
});
