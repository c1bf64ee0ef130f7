import { describe, expect, it } from 'vitest';
import { keyStream } from '../../src/events/catalog';
import { auditProjection } from '../../src/projections/audit/projection';
import { auditPage, auditTail } from '../../src/projections/audit/queries';
import { keyIssued, projectionSpec, wallet, type GivenEvent } from './support';

const spec = projectionSpec([auditProjection]);
const USD = 1_000_000_000n;
const by = (event: GivenEvent, actor: string): GivenEvent => ({ ...event, actor });

/** acct_a's trail: opened, a key issued (its row is acct_a's though the stream is the key's), a top-up, the
 * key revoked; acct_b's opening between them. Calls' holds are not audited. */
const trail = () => [
  by(wallet.opened('acct_a', 1000), 'admin'),
  by(keyIssued('key_1', 'acct_a', 1, 1001), 'admin'),
  by(wallet.opened('acct_b', 1001), 'admin'),
  wallet.reserved('acct_a', 'hold-1', USD, 'key_1', 1002),
  by(wallet.toppedUp('acct_a', 10n * USD, 'invoice 7', 1002), 'admin'),
  by({ stream: keyStream('key_1'), type: 'KeyRevoked', data: { reason: 'lost laptop', at: 1003 } }, 'console:abc'),
];

describe('audit/queries.ts', () => {
  it("auditPage: an account's trail in the log's order, each entry with its cursor; the next page goes on after it", async () => {
    const recorded = await spec.given(trail());
    const first = await auditPage(spec.sql, 'acct_a', undefined, 2);
    expect(first.more).toBe(true);
    expect(first.entries).toEqual([
      {
        eventId: recorded[0]!.id,
        action: 'AccountOpened',
        subjectType: 'account',
        subjectId: 'acct_a',
        actor: 'admin',
        details: { account_id: 'acct_a', name: 'name of acct_a' },
        at: 1000,
        cursor: { commit: '0', prepare: '0', eventId: recorded[0]!.id },
      },
      expect.objectContaining({ eventId: recorded[1]!.id, action: 'KeyIssued', subjectType: 'key', subjectId: 'key_1', at: 1001, cursor: { commit: '1', prepare: '1', eventId: recorded[1]!.id } }),
    ]);
    // The key hash never reaches the trail.
    expect(first.entries[1]!.details).not.toHaveProperty('hash');
    const second = await auditPage(spec.sql, 'acct_a', first.entries[1]!.cursor, 2);
    expect(second).toEqual({
      entries: [
        expect.objectContaining({ eventId: recorded[4]!.id, action: 'WalletToppedUp', subjectId: 'acct_a', details: { topup_id: 'topup-1002', amount: String(10n * USD), reference: 'invoice 7' } }),
        expect.objectContaining({ eventId: recorded[5]!.id, action: 'KeyRevoked', subjectType: 'key', subjectId: 'key_1', actor: 'console:abc', at: 1003 }),
      ],
      more: false,
    });
    expect((await auditPage(spec.sql, 'acct_b', undefined, 10)).entries.map((e) => e.action)).toEqual(['AccountOpened']);
    await spec.replayGivesSameRows();
  });

  it("auditTail: an account's last entries, newest first, at most `limit`", async () => {
    await spec.given(trail());
    expect(await auditTail(spec.sql, 'acct_a', 3)).toEqual([
      { action: 'KeyRevoked', subjectType: 'key', subjectId: 'key_1', actor: 'console:abc', at: 1003 },
      { action: 'WalletToppedUp', subjectType: 'account', subjectId: 'acct_a', actor: 'admin', at: 1002 },
      { action: 'KeyIssued', subjectType: 'key', subjectId: 'key_1', actor: 'admin', at: 1001 },
    ]);
    expect(await auditTail(spec.sql, 'acct_none')).toEqual([]);
    await spec.replayGivesSameRows();
  });
});
