import { describe, expect, it } from 'vitest';
import { keyStream } from '../../src/events/catalog';
import { accountsProjection } from '../../src/projections/accounts/projection';
import { keysProjection } from '../../src/projections/keys/projection';
import { accountKeyPage, accountKeys, agentKeyIds, enterpriseAgentKeys, keyByHash, keyUse, recordKeyUse } from '../../src/projections/keys/queries';
import { keyHash, keyIssued, projectionSpec, wallet } from './support';

// The keys' rows, with their spend from the accounts projection's key_spend.
const spec = projectionSpec([keysProjection, accountsProjection]);
const USD = 1_000_000_000n;
const deleted = (keyId: string, at: number) => ({ stream: keyStream(keyId), type: 'KeyDeleted', data: { at } });

describe('keys/queries.ts', () => {
  it('keyByHash: the key and account of a hash, nothing for an unknown one', async () => {
    await spec.given([keyIssued('key_a1', 'acct_a', 1, 1001), keyIssued('key_b1', 'acct_b', 2, 1002)]);
    expect(await keyByHash(spec.sql, keyHash(2))).toEqual([{ key_id: 'key_b1', account_id: 'acct_b' }]);
    expect(await keyByHash(spec.sql, keyHash(3))).toEqual([]);
    await spec.replayGivesSameRows();
  });

  it("accountKeyPage: an account's keys oldest first, by id within a second, deleted and other accounts' left out, paged", async () => {
    await spec.given([
      keyIssued('key_a1', 'acct_a', 1, 1001),
      keyIssued('key_a3', 'acct_a', 3, 1002),
      keyIssued('key_a2', 'acct_a', 2, 1002),
      keyIssued('key_gone', 'acct_a', 4, 1003),
      deleted('key_gone', 1004),
      keyIssued('key_b1', 'acct_b', 5, 1000),
    ]);
    expect(await accountKeyPage(spec.sql, 'acct_a', undefined, 2)).toEqual({
      keys: [
        { keyId: 'key_a1', createdAt: '1001' },
        { keyId: 'key_a2', createdAt: '1002' },
      ],
      more: true,
    });
    expect(await accountKeyPage(spec.sql, 'acct_a', { createdAt: '1002', keyId: 'key_a2' }, 2)).toEqual({ keys: [{ keyId: 'key_a3', createdAt: '1002' }], more: false });
    await spec.replayGivesSameRows();
  });

  it("keyUse: each key's last use (never moved back) and spend; a key never used has null and 0", async () => {
    await spec.given([
      wallet.opened('acct_a', 1000),
      wallet.granted('acct_a', 10n * USD, 1000),
      keyIssued('key_a1', 'acct_a', 1, 1001),
      keyIssued('key_a2', 'acct_a', 2, 1001),
      wallet.reserved('acct_a', 'hold-1', 100n, 'key_a1', 1002),
      wallet.settled('acct_a', 'hold-1', 100n, 60n, 1003),
    ]);
    await recordKeyUse(spec.sql, 'key_a1', 2000);
    await recordKeyUse(spec.sql, 'key_a1', 1500);
    expect(await keyUse(spec.sql, ['key_a1', 'key_a2', 'key_none'])).toEqual(
      new Map([
        ['key_a1', { lastUsedAt: 2000, spent: 60n }],
        ['key_a2', { lastUsedAt: null, spent: 0n }],
        ['key_none', { lastUsedAt: null, spent: 0n }],
      ]),
    );
    expect(await keyUse(spec.sql, [])).toEqual(new Map());
    // A rebuild keeps the request path's key_activity.
    await spec.replayGivesSameRows();
  });

  it("accountKeys: an account's keys newest first with settings, spend and last use; deleted ones left out", async () => {
    await spec.given([
      wallet.opened('acct_a', 1000),
      wallet.granted('acct_a', 10n * USD, 1000),
      keyIssued('key_a1', 'acct_a', 1, 1001, { name: 'laptop', spend_cap: 5n * USD }),
      keyIssued('key_a2', 'acct_a', 2, 1002),
      keyIssued('key_a3', 'acct_a', 3, 1002),
      keyIssued('key_gone', 'acct_a', 4, 1003),
      deleted('key_gone', 1004),
      keyIssued('key_b1', 'acct_b', 5, 1005),
      wallet.reserved('acct_a', 'hold-1', 100n, 'key_a1', 1006),
      wallet.settled('acct_a', 'hold-1', 100n, 60n, 1007),
    ]);
    await recordKeyUse(spec.sql, 'key_a1', 1008);
    const keys = await accountKeys(spec.sql, 'acct_a');
    expect(keys.map((k) => k.keyId)).toEqual(['key_a3', 'key_a2', 'key_a1']);
    expect(keys[2]).toEqual({
      keyId: 'key_a1',
      name: 'laptop',
      prefix: 'sk-0001',
      allowedModels: null,
      expiresAt: null,
      enabled: true,
      spendCap: 5n * USD,
      status: 'active',
      revealable: true,
      createdAt: 1001,
      spent: 60n,
      lastUsedAt: 1008,
    });
    expect(keys[0]).toMatchObject({ spendCap: null, spent: 0n, lastUsedAt: null });
    await spec.replayGivesSameRows();
  });

  it("agentKeyIds and enterpriseAgentKeys: an agent's keys oldest first; an enterprise's agent keys newest first, its ordinary keys left out", async () => {
    await spec.given([
      keyIssued('key_e1', 'acct_e', 1, 1001, { agent_id: 'agent_1' }),
      keyIssued('key_e2', 'acct_e', 2, 1002, { agent_id: 'agent_1', spend_cap: 3n * USD }),
      keyIssued('key_e3', 'acct_e', 3, 1003),
      keyIssued('key_e4', 'acct_e', 4, 1004, { agent_id: 'agent_2' }),
      deleted('key_e4', 1005),
      keyIssued('key_x1', 'acct_x', 5, 1006, { agent_id: 'agent_9' }),
    ]);
    expect(await agentKeyIds(spec.sql, 'agent_1')).toEqual(['key_e1', 'key_e2']);
    expect(await agentKeyIds(spec.sql, 'agent_2')).toEqual([]);
    expect(await enterpriseAgentKeys(spec.sql, 'acct_e')).toEqual([
      { keyId: 'key_e2', name: 'key key_e2', prefix: 'sk-0002', agentId: 'agent_1', status: 'active', enabled: true, spendCap: 3n * USD, spent: 0n },
      { keyId: 'key_e1', name: 'key key_e1', prefix: 'sk-0001', agentId: 'agent_1', status: 'active', enabled: true, spendCap: null, spent: 0n },
    ]);
    await spec.replayGivesSameRows();
  });
});
