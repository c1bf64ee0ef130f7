import type { Ledger } from '../commands/ledger';
import { sweptCall } from '../commands/swept-hold';
import type { WalletState } from '../commands/wallet/state';
import { UnreadableEventError, walletStream } from '../events/catalog';
import type { Sql } from '../storage/sql';

/**
 * Every hold has a deadline. A request or task that died (crash, lost worker) never
 * settles its hold; this releases holds past their deadline so none stays open.
 * Several instances may sweep at once: a release of a hold already closed is
 * refused by the wallet decider and changes nothing. Each release carries the call's
 * call-log row (`error`, `gateway_interrupted`), so a call that died with its gateway is seen.
 */
export async function sweepExpiredHolds(sql: Sql, ledger: Ledger, now: number, limit = 500): Promise<number> {
  const expired = await sql.query<{ account_id: string; hold_id: string }>(
    `SELECT account_id, hold_id FROM holds WHERE status = 'open' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    [now, limit],
  );
  let released = 0;
  // Read once per account and sweep: releasing one hold does not change another. A wallet whose
  // stream cannot be read (null) keeps its holds (its account answers 503) and holds back no other.
  const wallets = new Map<string, Promise<WalletState | null>>();
  for (const hold of expired) {
    // The projection may lag, and this process's cached wallet may still show events that a
    // database crash lost (a settlement of this very hold): the log decides whether it is open.
    let reading = wallets.get(hold.account_id);
    if (!reading) {
      reading = ledger.wallets.fromLog(walletStream(hold.account_id)).then(
        (loaded) => loaded.state,
        (error: unknown) => {
          if (error instanceof UnreadableEventError) return null;
          throw error;
        },
      );
      wallets.set(hold.account_id, reading);
    }
    const state = await reading;
    if (state === null) continue;
    const open = state.holds.get(hold.hold_id);
    if (!open || open.expiresAt > now) continue;
    const result = await ledger.release(hold.account_id, hold.hold_id, 'expired', sweptCall(open));
    if (result.ok) released += 1;
  }
  return released;
}
