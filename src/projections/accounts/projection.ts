import type { Projection } from '../projection';

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

  async apply(tx, event, recorded) {
    const accountId = recorded.streamId.slice('wallet-'.length);
    switch (event.type) {
      case 'AccountOpened':
        await tx.query(
          `INSERT INTO accounts (account_id, name, status, balance, held, credited, captured, created_at, updated_at)
           VALUES ($1, $2, 'active', 0, 0, 0, 0, $3, $3)`,
          [accountId, event.data.name, event.data.at],
        );
        return;
      case 'CreditGranted':
      case 'WalletToppedUp':
        await tx.query(
          `UPDATE accounts SET balance = balance + $2::bigint, credited = credited + $2::bigint, updated_at = $3 WHERE account_id = $1`,
          [accountId, String(event.data.amount), event.data.at],
        );
        return;
      case 'FundsReserved': {
        const { hold_id, amount, key_id, purpose, expires_at, at } = event.data;
        await tx.query(`UPDATE accounts SET held = held + $2::bigint, updated_at = $3 WHERE account_id = $1`, [accountId, String(amount), at]);
        await tx.query(
          `INSERT INTO holds (hold_id, account_id, key_id, purpose, amount, status, expires_at, created_at)
           VALUES ($1, $2, $3, $4, $5::bigint, 'open', $6, $7)`,
          [hold_id, accountId, key_id, purpose, String(amount), expires_at, at],
        );
        if (key_id !== null)
          await tx.query(
            `INSERT INTO key_spend (key_id, account_id, held) VALUES ($1, $2, $3::bigint)
             ON CONFLICT (key_id) DO UPDATE SET held = key_spend.held + EXCLUDED.held`,
            [key_id, accountId, String(amount)],
          );
        return;
      }
      case 'HoldSettled': {
        const { hold_id, hold_amount, captured, at } = event.data;
        await tx.query(
          `UPDATE accounts SET balance = balance - $2::bigint, held = held - $3::bigint, captured = captured + $2::bigint, updated_at = $4
            WHERE account_id = $1`,
          [accountId, String(captured), String(hold_amount), at],
        );
        const [hold] = await tx.query<{ key_id: string | null }>(
          `UPDATE holds SET status = 'settled', captured = $3::bigint, closed_at = $4 WHERE account_id = $1 AND hold_id = $2 RETURNING key_id`,
          [accountId, hold_id, String(captured), at],
        );
        if (hold?.key_id)
          await tx.query(`UPDATE key_spend SET spent = spent + $2::bigint, held = held - $3::bigint WHERE key_id = $1`, [
            hold.key_id,
            String(captured),
            String(hold_amount),
          ]);
        return;
      }
      case 'HoldReleased': {
        const { hold_id, amount, at } = event.data;
        await tx.query(`UPDATE accounts SET held = held - $2::bigint, updated_at = $3 WHERE account_id = $1`, [accountId, String(amount), at]);
        const [hold] = await tx.query<{ key_id: string | null }>(
          `UPDATE holds SET status = 'released', captured = 0, closed_at = $3 WHERE account_id = $1 AND hold_id = $2 RETURNING key_id`,
          [accountId, hold_id, at],
        );
        if (hold?.key_id) await tx.query(`UPDATE key_spend SET held = held - $2::bigint WHERE key_id = $1`, [hold.key_id, String(amount)]);
        return;
      }
      case 'AccountDeactivated':
      case 'AccountReactivated':
        await tx.query(`UPDATE accounts SET status = $2, updated_at = $3 WHERE account_id = $1`, [
          accountId,
          event.type === 'AccountDeactivated' ? 'inactive' : 'active',
          event.data.at,
        ]);
        return;
      case 'AccountLimitsSet':
        await tx.query(`UPDATE accounts SET rpm = $2, concurrency = $3, updated_at = $4 WHERE account_id = $1`, [
          accountId,
          event.data.rpm,
          event.data.concurrency,
          event.data.at,
        ]);
        return;
      default:
        return;
    }
  },
};
