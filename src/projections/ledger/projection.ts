import type { Projection } from '../projection';

/** One row per money movement of an account, with the running balance and held
 * amount after it: the statement a finance team reconciles against. */
export const ledgerProjection: Projection = {
  name: 'ledger',
  streams: ['wallet-'],
  tables: ['ledger_entries'],
  schema: `
CREATE TABLE IF NOT EXISTS ledger_entries (
  account_id text NOT NULL,
  seq bigint NOT NULL,
  event_id uuid NOT NULL UNIQUE,
  entry_type text NOT NULL,
  amount bigint NOT NULL,
  balance_after bigint NOT NULL,
  held_after bigint NOT NULL,
  hold_id text,
  key_id text,
  reference text,
  at bigint NOT NULL,
  PRIMARY KEY (account_id, seq)
);
-- A capture or release looks up its hold's row: without this a hot account's settlement scans its whole ledger.
CREATE INDEX IF NOT EXISTS ledger_entries_by_hold ON ledger_entries (account_id, hold_id) WHERE hold_id IS NOT NULL;`,

  async apply(tx, event, recorded) {
    const accountId = recorded.streamId.slice('wallet-'.length);
    let entry: { type: string; amount: bigint; balance: bigint; held: bigint; holdId?: string; keyId?: string | null; reference?: string } | null;
    switch (event.type) {
      case 'CreditGranted':
        entry = { type: 'grant', amount: event.data.amount, balance: event.data.amount, held: 0n, reference: event.data.reason };
        break;
      case 'WalletToppedUp':
        entry = { type: 'topup', amount: event.data.amount, balance: event.data.amount, held: 0n, reference: event.data.reference };
        break;
      case 'FundsReserved':
        entry = { type: 'hold', amount: event.data.amount, balance: 0n, held: event.data.amount, holdId: event.data.hold_id, keyId: event.data.key_id, reference: event.data.purpose };
        break;
      case 'HoldSettled':
        entry = { type: 'capture', amount: event.data.captured, balance: -event.data.captured, held: -event.data.hold_amount, holdId: event.data.hold_id };
        break;
      case 'HoldReleased':
        entry = { type: 'release', amount: event.data.amount, balance: 0n, held: -event.data.amount, holdId: event.data.hold_id, reference: event.data.reason };
        break;
      default:
        entry = null;
    }
    if (!entry) return;
    // Key of a capture or release: the hold's own row says which key made it.
    const keyId =
      entry.keyId !== undefined
        ? entry.keyId
        : ((
            await tx.query<{ key_id: string | null }>(
              `SELECT key_id FROM ledger_entries WHERE account_id = $1 AND hold_id = $2 AND entry_type = 'hold'`,
              [accountId, entry.holdId],
            )
          )[0]?.key_id ?? null);
    await tx.query(
      `INSERT INTO ledger_entries (account_id, seq, event_id, entry_type, amount, balance_after, held_after, hold_id, key_id, reference, at)
       SELECT $1, $2::bigint, $3::uuid, $4, $5::bigint,
              coalesce(last.balance_after, 0) + $6::bigint, coalesce(last.held_after, 0) + $7::bigint,
              $8, $9, $10, $11
         FROM (SELECT 1) AS one
         LEFT JOIN LATERAL (SELECT balance_after, held_after FROM ledger_entries
                             WHERE account_id = $1 ORDER BY seq DESC LIMIT 1) AS last ON true`,
      [
        accountId,
        String(recorded.revision),
        recorded.id,
        entry.type,
        String(entry.amount),
        String(entry.balance),
        String(entry.held),
        entry.holdId ?? null,
        keyId,
        entry.reference ?? null,
        (event.data as { at: number }).at,
      ],
    );
  },
};
