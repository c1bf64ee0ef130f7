import { copyLine } from '../../storage/copy-text';
import type { SqlQuery } from '../../storage/sql';
import { inSlices, WHOLE, type BatchWrites, type Projection } from '../projection';
import { foldAccounts, holdKey, type AccountChange, type HoldChange } from './changes';

/** Accounts with balances, their open and closed holds, and per-key spend. */
export const accountsProjection: Projection = {
  name: 'accounts',
  streams: ['wallet-'],
  tables: ['accounts', 'holds', 'key_spend'],
  schema: `
CREATE TABLE IF NOT EXISTS accounts (
  account_id text PRIMARY KEY,
  name text NOT NULL,
  status text NOT NULL,
  balance bigint NOT NULL,
  held bigint NOT NULL,
  credited bigint NOT NULL,
  captured bigint NOT NULL,
  rpm integer,
  concurrency integer,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS adjusted bigint NOT NULL DEFAULT 0;
-- The channel group the account is bound to (null: none).
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS channel_group text;
-- Taken back by the payment provider: refunds and lost disputes (WalletDebited).
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS debited bigint NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS holds (
  hold_id text NOT NULL,
  account_id text NOT NULL,
  key_id text,
  purpose text NOT NULL,
  amount bigint NOT NULL,
  status text NOT NULL,
  captured bigint,
  expires_at bigint NOT NULL,
  created_at bigint NOT NULL,
  closed_at bigint,
  PRIMARY KEY (account_id, hold_id)
);
CREATE INDEX IF NOT EXISTS holds_open_by_deadline ON holds (expires_at) WHERE status = 'open';
CREATE TABLE IF NOT EXISTS key_spend (
  key_id text PRIMARY KEY,
  account_id text NOT NULL,
  spent bigint NOT NULL DEFAULT 0,
  held bigint NOT NULL DEFAULT 0
);`,

  async applyBatch(tx, items, writes = WHOLE) {
    const { accounts, holds, keySpend } = foldAccounts(items);
    await writeAccounts(tx, [...accounts.values()]);
    await writeHolds(tx, holds, writes);
    await writeAdjustedSpend(tx, keySpend);
  },
};

const text = (v: bigint | number | null) => (v === null ? null : String(v));

async function writeAccounts(tx: SqlQuery, changes: readonly AccountChange[]) {
  const opened = changes.filter((c) => c.opened !== null);
  if (opened.length)
    await tx.query(
      `INSERT INTO accounts (account_id, name, status, balance, held, credited, captured, rpm, concurrency, created_at, updated_at, adjusted, channel_group, debited)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
                            $8::int[], $9::int[], $10::bigint[], $11::bigint[], $12::bigint[], $13::text[], $14::bigint[])`,
      [
        opened.map((c) => c.accountId),
        opened.map((c) => c.opened!.name),
        opened.map((c) => c.status ?? 'active'),
        opened.map((c) => text(c.balance)),
        opened.map((c) => text(c.held)),
        opened.map((c) => text(c.credited)),
        opened.map((c) => text(c.captured)),
        opened.map((c) => c.limits?.rpm ?? null),
        opened.map((c) => c.limits?.concurrency ?? null),
        opened.map((c) => c.opened!.at),
        opened.map((c) => c.updatedAt),
        opened.map((c) => text(c.adjusted)),
        opened.map((c) => c.group?.value ?? null),
        opened.map((c) => text(c.debited)),
      ],
    );
  const existing = changes.filter((c) => c.opened === null);
  if (existing.length)
    await tx.query(
      `UPDATE accounts AS a
          SET balance = a.balance + d.balance, held = a.held + d.held, credited = a.credited + d.credited,
              captured = a.captured + d.captured, adjusted = a.adjusted + d.adjusted, debited = a.debited + d.debited, status = coalesce(d.status, a.status),
              rpm = CASE WHEN d.limits_set THEN d.rpm ELSE a.rpm END,
              concurrency = CASE WHEN d.limits_set THEN d.concurrency ELSE a.concurrency END,
              channel_group = CASE WHEN d.group_set THEN d.channel_group ELSE a.channel_group END,
              updated_at = d.updated_at
         FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::boolean[],
                     $8::int[], $9::int[], $10::bigint[], $11::bigint[], $12::boolean[], $13::text[], $14::bigint[])
              AS d(account_id, balance, held, credited, captured, status, limits_set, rpm, concurrency, updated_at, adjusted, group_set, channel_group, debited)
        WHERE a.account_id = d.account_id`,
      [
        existing.map((c) => c.accountId),
        existing.map((c) => text(c.balance)),
        existing.map((c) => text(c.held)),
        existing.map((c) => text(c.credited)),
        existing.map((c) => text(c.captured)),
        existing.map((c) => c.status),
        existing.map((c) => c.limits !== null),
        existing.map((c) => c.limits?.rpm ?? null),
        existing.map((c) => c.limits?.concurrency ?? null),
        existing.map((c) => c.updatedAt),
        existing.map((c) => text(c.adjusted)),
        existing.map((c) => c.group !== null),
        existing.map((c) => c.group?.value ?? null),
        existing.map((c) => text(c.debited)),
      ],
    );
}

const HOLD_COLUMNS = ['hold_id', 'account_id', 'key_id', 'purpose', 'amount', 'status', 'captured', 'expires_at', 'created_at', 'closed_at'];

/** Holds reserved in the batch are inserted as the batch leaves them; holds reserved
 * earlier are updated, and their rows tell which key the batch's spend goes to. */
async function writeHolds(tx: SqlQuery, holds: ReadonlyMap<string, HoldChange>, writes: BatchWrites) {
  const changes = [...holds.values()];
  const reserved = changes.filter((h) => h.reserved !== null);
  if (writes.copy) {
    let lines = '';
    for (const h of reserved)
      lines += copyLine([h.holdId, h.accountId, h.reserved!.keyId, h.reserved!.purpose, h.reserved!.amount, h.status, h.captured, h.reserved!.expiresAt, h.reserved!.createdAt, h.closedAt]);
    await tx.copyFrom('holds', HOLD_COLUMNS, lines);
  } else await inSlices(reserved, writes, (slice) =>
    tx.query(
      `INSERT INTO holds (hold_id, account_id, key_id, purpose, amount, status, captured, expires_at, created_at, closed_at)
       SELECT * FROM json_to_recordset($1::json)
                  AS r(hold_id text, account_id text, key_id text, purpose text, amount bigint, status text, captured bigint,
                       expires_at bigint, created_at bigint, closed_at bigint)`,
      [
        JSON.stringify(
          slice.map((h) => ({
            hold_id: h.holdId,
            account_id: h.accountId,
            key_id: h.reserved!.keyId,
            purpose: h.reserved!.purpose,
            amount: text(h.reserved!.amount),
            status: h.status,
            captured: text(h.captured),
            expires_at: h.reserved!.expiresAt,
            created_at: h.reserved!.createdAt,
            closed_at: h.closedAt,
          })),
        ),
      ],
    ),
  );
  const spend = new Map<string, { accountId: string; spent: bigint; held: bigint }>();
  const charge = (keyId: string | null, h: HoldChange) => {
    if (keyId === null) return;
    const s = spend.get(keyId) ?? { accountId: h.accountId, spent: 0n, held: 0n };
    s.spent += h.spent;
    s.held += h.keyHeld;
    spend.set(keyId, s);
  };
  for (const h of reserved) charge(h.reserved!.keyId, h);
  const closed = changes.filter((h) => h.reserved === null);
  await inSlices(closed, writes, async (slice) => {
    const rows = await tx.query<{ account_id: string; hold_id: string; key_id: string | null }>(
      `UPDATE holds AS h SET status = c.status, captured = c.captured, closed_at = c.closed_at
         FROM json_to_recordset($1::json) AS c(account_id text, hold_id text, status text, captured bigint, closed_at bigint)
        WHERE h.account_id = c.account_id AND h.hold_id = c.hold_id
        RETURNING h.account_id, h.hold_id, h.key_id`,
      [JSON.stringify(slice.map((h) => ({ account_id: h.accountId, hold_id: h.holdId, status: h.status, captured: text(h.captured), closed_at: h.closedAt })))],
    );
    for (const row of rows) charge(row.key_id, holds.get(holdKey(row.account_id, row.hold_id))!);
  });
  if (spend.size === 0) return;
  // One upsert serves reserves and closes alike: a key's row is created by its first
  // reserve, in the same transaction as the hold row a later close reads the key from.
  const keys = [...spend.entries()];
  await tx.query(
    `INSERT INTO key_spend (key_id, account_id, spent, held)
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
     ON CONFLICT (key_id) DO UPDATE SET spent = key_spend.spent + EXCLUDED.spent, held = key_spend.held + EXCLUDED.held`,
    [keys.map(([k]) => k), keys.map(([, s]) => s.accountId), keys.map(([, s]) => text(s.spent)), keys.map(([, s]) => text(s.held))],
  );
}

/** Re-rates move a key's spend outside any hold. */
async function writeAdjustedSpend(tx: SqlQuery, keySpend: ReadonlyMap<string, { accountId: string; spent: bigint }>) {
  if (keySpend.size === 0) return;
  const keys = [...keySpend.entries()];
  await tx.query(
    `INSERT INTO key_spend (key_id, account_id, spent, held)
     SELECT k, a, s, 0 FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(k, a, s)
     ON CONFLICT (key_id) DO UPDATE SET spent = key_spend.spent + EXCLUDED.spent`,
    [keys.map(([k]) => k), keys.map(([, s]) => s.accountId), keys.map(([, s]) => text(s.spent))],
  );
}
