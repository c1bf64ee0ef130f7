import { walletStream } from '../events/catalog';
import type { Sql } from '../storage/sql';
import type { Ledger } from './ledger';
import type { WalletState } from './wallet/decider';

/**
 * Every hold has a deadline. A request or task that died (crash, lost worker) never
 * settles its hold; this releases holds past their deadline so none stays open.
 * Several instances may sweep at once: a release of a hold already closed is
 * refused by the wallet decider and changes nothing.
 */
export async function sweepExpiredHolds(sql: Sql, ledger: Ledger, now: number, limit = 500): Promise<number> {
  const expired = await sql.query<{ account_id: string; hold_id: string }>(
    `SELECT account_id, hold_id FROM holds WHERE status = 'open' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    [now, limit],
  );
  let released = 0;
  // Read once per account and sweep: releasing one hold does not change another.
  const wallets = new Map<string, Promise<WalletState>>();
  for (const hold of expired) {
    // The projection may lag, and this process's cached wallet may still show events that a
    // database crash lost (a settlement of this very hold): the log decides whether it is open.
    let reading = wallets.get(hold.account_id);
    if (!reading) wallets.set(hold.account_id, (reading = ledger.wallets.fromLog(walletStream(hold.account_id)).then((loaded) => loaded.state)));
    const state = await reading;
    const open = state.holds.get(hold.hold_id);
    if (!open || open.expiresAt > now) continue;
    const result = await ledger.release(hold.account_id, hold.hold_id, 'expired');
    if (result.ok) released += 1;
  }
  return released;
}
