import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_MESSAGES, QUOTA_MESSAGE } from '../../src/http/plugins/auth';
import { parseUsd } from '../../src/money/usd';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
let clock = 1_800_000_000;

beforeAll(async () => {
  t = await startTestGateway({ now: () => clock });
  // Billable endpoints arrive with the chat issue; these stand in for one route of each error shape.
  for (const [url, shape] of [
    ['/v1/test/chat', 'chat'],
    ['/v1/messages/test', 'messages'],
    ['/v1beta/models/test:generateContent', 'generate'],
  ] as const)
    t.gateway.app.post(url, { bodyLimit: 1024, config: { auth: 'key', shape } }, async (request) => ({ account: request.caller!.accountId }));
});
afterAll(() => t.close());

const inject = (url: string, headers: Record<string, string> = {}, method: 'GET' | 'POST' = 'POST') =>
  t.gateway.app.inject({ method, url, headers, ...(method === 'POST' ? { payload: {} } : {}) });

describe('authentication', () => {
  it('accepts the key from each source in the spec and picks the first present', async () => {
    const { key, accountId } = await t.accountWithKey();
    const sources: Record<string, string>[] = [{ 'x-api-key': key }, { 'x-goog-api-key': key }, { 'x-vendor-api-key': key }, { authorization: `Bearer ${key}` }];
    for (const headers of sources) {
      const response = await inject('/v1/test/chat', headers);
      expect(response.statusCode, JSON.stringify(headers)).toBe(200);
      expect(response.json()).toEqual({ account: accountId });
    }
    expect((await inject(`/v1/test/chat?key=${key}`)).statusCode).toBe(200);

    const { key: other } = await t.accountWithKey();
    const bogus = `sk-AAAAAAAA-${'0'.repeat(64)}`;
    // x-api-key wins over everything; a bad first credential is not rescued by a later good one.
    expect((await inject('/v1/test/chat', { 'x-api-key': bogus, authorization: `Bearer ${key}` })).statusCode).toBe(401);
    expect((await inject('/v1/test/chat', { 'x-goog-api-key': key, authorization: `Bearer ${bogus}` })).statusCode).toBe(200);
    expect((await inject(`/v1/test/chat?key=${other}`, { authorization: `Bearer ${bogus}` })).statusCode).toBe(200);
    expect((await inject(`/v1/test/chat?key=${bogus}`, { authorization: `Bearer ${key}` })).statusCode).toBe(401);
  });

  it('takes a key from Authorization only with the Bearer scheme', async () => {
    const { key } = await t.accountWithKey();
    for (const authorization of [key, `Basic ${key}`, `Token ${key}`]) {
      const response = await inject('/v1/test/chat', { authorization });
      expect(response.statusCode, authorization).toBe(401);
      expect(response.json().error.message, authorization).toBe(AUTH_MESSAGES.missing);
    }
    expect((await inject('/v1/test/chat', { authorization: `bearer  ${key}` })).statusCode).toBe(200);
  });

  it('gives five distinct 401 messages, all with code invalid_api_key', async () => {
    const missing = await inject('/v1/test/chat');
    const malformed = await inject('/v1/test/chat', { 'x-api-key': 'sk-short' });
    const invalid = await inject('/v1/test/chat', { 'x-api-key': `sk-AAAAAAAA-${'1'.repeat(64)}` });

    const revoked = await t.accountWithKey();
    await t.admin('POST', `/keys/${revoked.keyId}/revoke`);
    const disabled = await t.accountWithKey({ enabled: false });
    const deleted = await t.accountWithKey();
    await t.admin('DELETE', `/keys/${deleted.keyId}`);
    const expiring = await t.accountWithKey({ expires_at: clock + 10 });
    const beforeExpiry = await inject('/v1/test/chat', { 'x-api-key': expiring.key });
    clock += 10;
    const expired = await inject('/v1/test/chat', { 'x-api-key': expiring.key });
    const inactive = await t.accountWithKey();
    await t.admin('POST', `/accounts/${inactive.accountId}/deactivate`, {});

    expect(beforeExpiry.statusCode).toBe(200);
    const cases = {
      missing: missing,
      malformed: malformed,
      invalid,
      revoked: await inject('/v1/test/chat', { 'x-api-key': revoked.key }),
      disabled: await inject('/v1/test/chat', { 'x-api-key': disabled.key }),
      deleted: await inject('/v1/test/chat', { 'x-api-key': deleted.key }),
      expired,
      inactive: await inject('/v1/test/chat', { 'x-api-key': inactive.key }),
    };
    for (const [name, response] of Object.entries(cases)) {
      expect(response.statusCode, name).toBe(401);
      expect(response.json().error.code, name).toBe('invalid_api_key');
      expect(response.json().error.type, name).toBe('authentication_error');
    }
    const message = (name: keyof typeof cases) => cases[name].json().error.message;
    expect(message('missing')).toBe(AUTH_MESSAGES.missing);
    expect(message('malformed')).toBe(AUTH_MESSAGES.missing);
    expect(message('invalid')).toBe(AUTH_MESSAGES.invalid);
    expect(message('revoked')).toBe(AUTH_MESSAGES.revoked);
    expect(message('disabled')).toBe(AUTH_MESSAGES.revoked);
    expect(message('deleted')).toBe(AUTH_MESSAGES.revoked);
    expect(message('expired')).toBe(AUTH_MESSAGES.expired);
    expect(message('inactive')).toBe(AUTH_MESSAGES.inactive);
    expect(new Set(Object.values(AUTH_MESSAGES)).size).toBe(5);

    await t.admin('POST', `/accounts/${inactive.accountId}/reactivate`, {});
    expect((await inject('/v1/test/chat', { 'x-api-key': inactive.key })).statusCode).toBe(200);
  });

  it('renders 401 in the messages and generate-content shapes', async () => {
    const messages = await inject('/v1/messages/test', { 'x-api-key': 'nope' });
    expect(messages.statusCode).toBe(401);
    expect(messages.json()).toEqual({ type: 'error', error: { type: 'authentication_error', message: AUTH_MESSAGES.missing } });
    const generate = await inject('/v1beta/models/test:generateContent', { 'x-goog-api-key': `sk-AAAAAAAA-${'2'.repeat(64)}` });
    expect(generate.statusCode).toBe(401);
    expect(generate.json()).toEqual({ error: { code: 401, message: AUTH_MESSAGES.invalid, status: 'UNAUTHENTICATED' } });
  });

  it('refuses a balance of 0 or below with 402 at authentication, except on the free endpoints', async () => {
    const { accountId, key } = await t.accountWithKey();
    // Spend the whole grant exactly: balance 0.
    const ledger = t.gateway.ledger;
    expect((await ledger.reserve(accountId, { holdId: 'h1', amount: parseUsd('40.44'), keyId: null, purpose: 'test', ttlSeconds: 60 })).ok).toBe(true);
    expect((await ledger.settle(accountId, 'h1', parseUsd('40.44'))).ok).toBe(true);

    const chat = await inject('/v1/test/chat', { authorization: `Bearer ${key}` });
    expect(chat.statusCode).toBe(402);
    expect(chat.json()).toEqual({ error: { message: QUOTA_MESSAGE, type: 'insufficient_quota', code: 'quota_exceeded' } });
    expect(chat.json().error.message).toMatch(/top up/i);
    const messages = await inject('/v1/messages/test', { 'x-api-key': key });
    expect(messages.json()).toEqual({ type: 'error', error: { type: 'billing_error', message: QUOTA_MESSAGE } });
    const generate = await inject('/v1beta/models/test:generateContent', { 'x-goog-api-key': key });
    expect(generate.json()).toEqual({ error: { code: 402, message: QUOTA_MESSAGE, status: 'RESOURCE_EXHAUSTED' } });

    for (const url of ['/v1/key/balance', '/v1/dashboard/billing/subscription', '/dashboard/billing/usage', '/v1/models'])
      expect((await inject(url, { authorization: `Bearer ${key}` }, 'GET')).statusCode, url).toBe(200);

    // A top-up makes the same key work again.
    expect((await t.admin('POST', `/accounts/${accountId}/topups`, { amount_usd: '134.80', reference: 'inv-1' })).statusCode).toBe(201);
    expect((await inject('/v1/test/chat', { authorization: `Bearer ${key}` })).statusCode).toBe(200);
  });

  it('GET /v1/models takes only Bearer or x-api-key; ?key= gives 401', async () => {
    const { key } = await t.accountWithKey();
    expect((await inject('/v1/models', { authorization: `Bearer ${key}` }, 'GET')).statusCode).toBe(200);
    expect((await inject('/v1/models', { 'x-api-key': key }, 'GET')).statusCode).toBe(200);
    const viaQuery = await inject(`/v1/models?key=${key}`, {}, 'GET');
    expect(viaQuery.statusCode).toBe(401);
    expect(viaQuery.json().error.code).toBe('invalid_api_key');
    expect((await inject('/v1/models', { 'x-goog-api-key': key }, 'GET')).statusCode).toBe(401);
  });

  it('records last-used time, but not for the balance and billing endpoints', async () => {
    const { accountId, keyId, key } = await t.accountWithKey();
    const lastUsed = async () => (await t.admin('GET', `/accounts/${accountId}/keys`)).json().data.find((k: { id: string }) => k.id === keyId).last_used_at;
    for (const url of ['/v1/key/balance', '/v1/dashboard/billing/subscription', '/v1/dashboard/billing/usage', '/dashboard/billing/subscription', '/dashboard/billing/usage'])
      expect((await inject(url, { authorization: `Bearer ${key}` }, 'GET')).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    expect(await lastUsed()).toBeNull();
    expect((await inject('/v1/test/chat', { authorization: `Bearer ${key}` })).statusCode).toBe(200);
    await expect.poll(lastUsed).toBe(clock);
  });
});
