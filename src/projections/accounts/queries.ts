import type { SqlQuery } from '../../storage/sql';

/** The read side of `accounts` (what the admin API lists). An account's state is read from its wallet
 * aggregate; the table says which accounts exist, in id order. `key_spend` is read with the keys
 * (keys/queries.ts); the open `holds` by `/metrics` (open-holds.ts) and the hold sweeper
 * (src/commands/hold-sweeper.ts). */

/** A page of account ids in id order, after `after` ('': from the first); `more` when a next page exists. */
export async function accountIdPage(sql: SqlQuery, after: string, limit: number): Promise<{ ids: string[]; more: boolean }> {
  const rows = await sql.query<{ account_id: string }>(`SELECT account_id FROM accounts WHERE account_id > $1 ORDER BY account_id LIMIT $2`, [after, limit + 1]);
  return { ids: rows.slice(0, limit).map((r) => r.account_id), more: rows.length > limit };
}
