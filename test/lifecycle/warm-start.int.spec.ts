import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { testDatabase, type TestDatabase } from '../support/storage';

// Issue 16, item 2: the first call after a start costs about what any other call costs. A start
// loads the keys used most recently and their wallets before /readyz says ready.

let db: TestDatabase | null = null;
const open: TestGateway[] = [];
afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
  await db?.drop();
  db = null;
});

async function start(env: Record<string, string> = {}) {
  const t = await startTestGateway({ db: db!, env });
  open.push(t);
  return t;
}

/** A key used through the client API (which records its last use). */
async function usedKey(t: TestGateway) {
  const { accountId, keyId, key } = await t.accountWithKey();
  const models = await t.gateway.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${key}` } });
  expect(models.statusCode).toBe(200);
  for (let i = 0; i < 100; i++) {
    const rows = await t.gateway.storage.sql.query<{ key_id: string }>('SELECT key_id FROM key_activity WHERE key_id = $1', [keyId]);
    if (rows.length > 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { accountId, keyId };
}

describe('warm start', () => {
  it('loads the most recently used keys and their wallets before /readyz says ready', async () => {
    db = await testDatabase();
    const first = await start();
    const used = [await usedKey(first), await usedKey(first)];
    const unused = await first.accountWithKey();
    await first.close();
    open.splice(0);

    const second = await start();
    const outcome = await second.gateway.warmed;
    expect(outcome).toMatchObject({ keys: 2, accounts: 2, cut: null });
    // In the ledger's caches without a read: what the first call of these accounts finds.
    for (const { accountId, keyId } of used) {
      expect(second.gateway.ledger.freshWallet(accountId)?.balance).toBe(40_440_000_000n); // the sign-up grant
      expect(second.gateway.ledger.freshKey(keyId)?.status).toBe('active');
    }
    expect(second.gateway.ledger.freshWallet(unused.accountId)).toBeUndefined();
    const ready = await second.gateway.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks.warm_start).toEqual({ status: 'ok', keys: 2, accounts: 2, ms: expect.any(Number) });
  });

  it('loads at most WARM_START_KEYS keys, most recent first; 0 turns it off', async () => {
    db = await testDatabase();
    const first = await start();
    const older = await usedKey(first);
    await first.gateway.storage.sql.query('UPDATE key_activity SET last_used_at = last_used_at - 60 WHERE key_id = $1', [older.keyId]);
    const newer = await usedKey(first);
    await first.close();
    open.splice(0);

    const one = await start({ WARM_START_KEYS: '1' });
    expect(await one.gateway.warmed).toMatchObject({ keys: 1, accounts: 1 });
    expect(one.gateway.ledger.freshKey(newer.keyId)).toBeDefined();
    expect(one.gateway.ledger.freshKey(older.keyId)).toBeUndefined();
    await one.close();
    open.splice(0);

    const none = await start({ WARM_START_KEYS: '0' });
    expect(await none.gateway.warmed).toMatchObject({ keys: 0, accounts: 0, cut: null });
    expect(none.gateway.ledger.freshWallet(newer.accountId)).toBeUndefined();
  });

  it('refuses a WARM_START_KEYS that is not a whole number', async () => {
    db = await testDatabase();
    await expect(start({ WARM_START_KEYS: 'many' })).rejects.toThrow(/WARM_START_KEYS must be a whole number/);
  });
});
