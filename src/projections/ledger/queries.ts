import type { SqlQuery } from '../../storage/sql';

/** The read side of `ledger_entries`: what the console shows of an account's money movements. */

export interface Credit {
  readonly type: string;
  readonly amount: bigint;
  readonly reference: string | null;
  readonly at: number;
}

/** Grants and top-ups, newest first. */
export async function credits(sql: SqlQuery, accountId: string, limit = 20): Promise<Credit[]> {
  const rows = await sql.query<{ entry_type: string; amount: string; reference: string | null; at: string }>(
    `SELECT entry_type, amount::text AS amount, reference, at::text AS at FROM ledger_entries
      WHERE account_id = $1 AND entry_type IN ('grant', 'topup') ORDER BY seq DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows.map((r) => ({ type: r.entry_type, amount: BigInt(r.amount), reference: r.reference, at: Number(r.at) }));
}

export interface LedgerLine {
  readonly seq: number;
  readonly type: string;
  readonly amount: bigint;
  readonly balanceAfter: bigint;
  readonly heldAfter: bigint;
  readonly reference: string | null;
  readonly at: number;
}

/** The ledger entries of a call: its hold and what ended it (capture or release), found through the
 * event that wrote the call's row (the row's id is that event's id). Empty for a rejected call. */
export async function callLedger(sql: SqlQuery, accountId: string, callId: string): Promise<LedgerLine[]> {
  const rows = await sql.query<{ seq: string; entry_type: string; amount: string; balance_after: string; held_after: string; reference: string | null; at: string }>(
    `SELECT e.seq::text AS seq, e.entry_type, e.amount::text AS amount, e.balance_after::text AS balance_after, e.held_after::text AS held_after,
            e.reference, e.at::text AS at
       FROM ledger_entries e
      WHERE e.account_id = $1
        AND e.hold_id = (SELECT hold_id FROM ledger_entries WHERE account_id = $1 AND event_id = $2::uuid)
      ORDER BY e.seq`,
    [accountId, callId],
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    type: r.entry_type,
    amount: BigInt(r.amount),
    balanceAfter: BigInt(r.balance_after),
    heldAfter: BigInt(r.held_after),
    reference: r.reference,
    at: Number(r.at),
  }));
}
