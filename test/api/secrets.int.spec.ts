import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

/** Every text column of every table in the gateway's database, concatenated. */
async function everyStoredText(): Promise<string> {
  const tables = await t.db.sql.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  let all = '';
  for (const { table_name } of tables) {
    const rows = await t.db.sql.query(`SELECT * FROM ${table_name}`);
    all += JSON.stringify(rows);
  }
  return all;
}

describe('a raw API key', () => {
  it('never appears in an event, a projection or a log line, and is stored encrypted', async () => {
    const { accountId, keyId, key } = await t.accountWithKey();
    const second = (await t.admin('POST', `/accounts/${accountId}/keys`, { name: 'second' })).json();
    // Use the keys through every credential source, including the discouraged ?key=.
    await t.gateway.app.inject({ method: 'GET', url: `/v1/key/balance?key=${key}` });
    await t.gateway.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${second.key}` } });
    await t.gateway.app.inject({ method: 'GET', url: `/v1/models?key=${key}` });
    await t.gateway.app.inject({ method: 'GET', url: '/v1/key/balance', headers: { 'x-goog-api-key': key } });
    await t.admin('GET', `/keys/${keyId}/reveal`);
    await t.admin('PATCH', `/keys/${keyId}`, { name: 'renamed' });
    await t.gateway.runner.catchUpToHead();

    const stored = await everyStoredText();
    const logs = t.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).toContain('[redacted]');
    for (const raw of [key, second.key]) {
      const secretPart = raw.slice(12);
      expect(stored).not.toContain(secretPart);
      expect(logs).not.toContain(secretPart);
    }
    // The vault row exists, and it is not the key in any plain encoding.
    const [vault] = await t.db.sql.query<{ ciphertext: string }>('SELECT ciphertext FROM key_vault WHERE key_id = $1', [keyId]);
    expect(vault?.ciphertext).toMatch(/^v1\./);
    expect(vault!.ciphertext).not.toContain(Buffer.from(key).toString('base64').slice(0, 40));
    // And the events carry the prefix and the hash only.
    const events = await t.db.sql.query<{ data: Record<string, unknown> }>(`SELECT data FROM events WHERE type = 'KeyIssued'`);
    for (const { data } of events) {
      expect(Object.keys(data).sort()).toEqual(
        ['account_id', 'allowed_models', 'at', 'enabled', 'expires_at', 'hash', 'key_id', 'name', 'prefix', 'revealable', 'spend_cap'].sort(),
      );
    }
  });
});
