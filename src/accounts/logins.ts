import { createHash, randomBytes } from 'node:crypto';
import type { Sql } from '../storage/sql';

/** A holder's own sign-in: address, password hash, verification; the emailed links (SHA-256 digests
 * only); and the attempts the sign-up and sign-in limits count. In the gateway's database (PGlite or
 * Postgres), so every instance sees the same. */
export const LOGINS_SCHEMA = `
CREATE TABLE IF NOT EXISTS account_logins (
  account_id text PRIMARY KEY,
  email text NOT NULL UNIQUE,
  password_hash text NOT NULL,
  created_at bigint NOT NULL,
  verified_at bigint,
  signup_ip text NOT NULL,
  password_changed_at bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS account_links (
  token_hash text PRIMARY KEY,
  account_id text NOT NULL,
  purpose text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  used_at bigint
);
CREATE INDEX IF NOT EXISTS account_links_account ON account_links (account_id, purpose) WHERE used_at IS NULL;
-- The new address a change_email link confirms; null for the other purposes.
ALTER TABLE account_links ADD COLUMN IF NOT EXISTS email text;
CREATE TABLE IF NOT EXISTS account_attempts (
  kind text NOT NULL,
  subject text NOT NULL,
  at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS account_attempts_by_subject ON account_attempts (kind, subject, at);`;

export type LinkPurpose = 'verify_email' | 'password_reset' | 'change_email';
/** A password reset link works once and for 30 minutes; a verification link (of the first address or a new one) for a day. */
export const LINK_TTL_S: Record<LinkPurpose, number> = { verify_email: 24 * 3600, password_reset: 30 * 60, change_email: 24 * 3600 };

export interface Login {
  readonly accountId: string;
  readonly email: string;
  readonly passwordHash: string;
  readonly createdAt: number;
  readonly verifiedAt: number | null;
  readonly signupIp: string;
}

export type Redeemed = { readonly ok: true; readonly accountId: string; readonly link: string; readonly email: string | null } | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' };

const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');
/** How events name a link: the first 12 hex digits of its digest. */
export const fingerprintOf = (hash: string) => hash.slice(0, 12);

interface LoginRow {
  account_id: string;
  email: string;
  password_hash: string;
  created_at: string;
  verified_at: string | null;
  signup_ip: string;
}
const COLUMNS = 'account_id, email, password_hash, created_at::text AS created_at, verified_at::text AS verified_at, signup_ip';
const loginOf = (row: LoginRow): Login => ({
  accountId: row.account_id,
  email: row.email,
  passwordHash: row.password_hash,
  createdAt: Number(row.created_at),
  verifiedAt: row.verified_at === null ? null : Number(row.verified_at),
  signupIp: row.signup_ip,
});

export class Logins {
  constructor(
    private readonly sql: Sql,
    private readonly now: () => number,
  ) {}

  async migrate(): Promise<void> {
    await this.sql.exec(LOGINS_SCHEMA);
  }

  /** Claims the address for the account; false when another account has it (one row per address). */
  async claim(login: { accountId: string; email: string; passwordHash: string; ip: string }): Promise<boolean> {
    const at = this.now();
    const rows = await this.sql.query(
      `INSERT INTO account_logins (account_id, email, password_hash, created_at, signup_ip, password_changed_at) VALUES ($1, $2, $3, $4, $5, $4)
       ON CONFLICT DO NOTHING RETURNING account_id`,
      [login.accountId, login.email, login.passwordHash, at, login.ip],
    );
    return rows.length === 1;
  }

  /** A claim whose account could not be opened is given back. */
  async release(accountId: string): Promise<void> {
    await this.sql.query(`DELETE FROM account_logins WHERE account_id = $1`, [accountId]);
  }

  async byEmail(email: string): Promise<Login | null> {
    const [row] = await this.sql.query<LoginRow>(`SELECT ${COLUMNS} FROM account_logins WHERE email = $1`, [email]);
    return row ? loginOf(row) : null;
  }

  async byAccount(accountId: string): Promise<Login | null> {
    const [row] = await this.sql.query<LoginRow>(`SELECT ${COLUMNS} FROM account_logins WHERE account_id = $1`, [accountId]);
    return row ? loginOf(row) : null;
  }

  /** Sign-ups, newest first, for the operator; `before` the `created_at:account_id` cursor of the last page. */
  async list(limit: number, before?: { createdAt: number; accountId: string }): Promise<Login[]> {
    const rows = before
      ? await this.sql.query<LoginRow>(
          `SELECT ${COLUMNS} FROM account_logins WHERE (created_at, account_id) < ($1, $2) ORDER BY created_at DESC, account_id DESC LIMIT $3`,
          [before.createdAt, before.accountId, limit],
        )
      : await this.sql.query<LoginRow>(`SELECT ${COLUMNS} FROM account_logins ORDER BY created_at DESC, account_id DESC LIMIT $1`, [limit]);
    return rows.map(loginOf);
  }

  /** True the first time only. */
  async markVerified(accountId: string): Promise<boolean> {
    return (await this.sql.query(`UPDATE account_logins SET verified_at = $2 WHERE account_id = $1 AND verified_at IS NULL RETURNING account_id`, [accountId, this.now()])).length === 1;
  }

  /** False when another account has the address. */
  async setEmail(accountId: string, email: string): Promise<boolean> {
    const taken = await this.sql.query(`SELECT 1 FROM account_logins WHERE email = $1 AND account_id <> $2`, [email, accountId]);
    if (taken.length > 0) return false;
    await this.sql.query(`UPDATE account_logins SET email = $2, verified_at = COALESCE(verified_at, $3) WHERE account_id = $1`, [accountId, email, this.now()]);
    return true;
  }

  async setPassword(accountId: string, passwordHash: string): Promise<void> {
    await this.sql.query(`UPDATE account_logins SET password_hash = $2, password_changed_at = $3 WHERE account_id = $1`, [accountId, passwordHash, this.now()]);
  }

  /** A new link secret; only its digest is stored. `email`: the new address a change_email link confirms. */
  async issueLink(accountId: string, purpose: LinkPurpose, email: string | null = null): Promise<{ token: string; fingerprint: string; expiresAt: number }> {
    const token = randomBytes(32).toString('base64url');
    const hash = digest(token);
    const at = this.now();
    const expiresAt = at + LINK_TTL_S[purpose];
    await this.sql.query(`INSERT INTO account_links (token_hash, account_id, purpose, created_at, expires_at, email) VALUES ($1, $2, $3, $4, $5, $6)`, [
      hash,
      accountId,
      purpose,
      at,
      expiresAt,
      email,
    ]);
    return { token, fingerprint: fingerprintOf(hash), expiresAt };
  }

  /** Uses a link once: the UPDATE claims it atomically, so two redemptions of one link do one thing. */
  async redeem(token: string, purpose: LinkPurpose): Promise<Redeemed> {
    const hash = digest(token);
    const at = this.now();
    const [claimed] = await this.sql.query<{ account_id: string; email: string | null }>(
      `UPDATE account_links SET used_at = $2 WHERE token_hash = $1 AND purpose = $3 AND used_at IS NULL AND expires_at > $2 RETURNING account_id, email`,
      [hash, at, purpose],
    );
    if (claimed) return { ok: true, accountId: claimed.account_id, link: fingerprintOf(hash), email: claimed.email };
    const [row] = await this.sql.query<{ used_at: string | null }>(`SELECT used_at::text AS used_at FROM account_links WHERE token_hash = $1 AND purpose = $2`, [hash, purpose]);
    return { ok: false, reason: !row ? 'unknown' : row.used_at !== null ? 'used' : 'expired' };
  }

  /** Ends the account's other open links of that purpose (a reset used ends the others). */
  async useUpLinks(accountId: string, purpose: LinkPurpose): Promise<void> {
    await this.sql.query(`UPDATE account_links SET used_at = $3 WHERE account_id = $1 AND purpose = $2 AND used_at IS NULL`, [accountId, purpose, this.now()]);
  }

  /** Attempts of `kind` by `subject` within the last `windowS` seconds, and when the oldest of them leaves it. */
  async attempts(kind: string, subject: string, windowS: number): Promise<{ count: number; retryAfter: number }> {
    const since = this.now() - windowS;
    const [row] = await this.sql.query<{ count: string; oldest: string | null }>(
      `SELECT count(*)::text AS count, min(at)::text AS oldest FROM account_attempts WHERE kind = $1 AND subject = $2 AND at > $3`,
      [kind, subject, since],
    );
    const oldest = row?.oldest ? Number(row.oldest) : this.now();
    return { count: Number(row?.count ?? 0), retryAfter: Math.max(1, oldest + windowS - this.now()) };
  }

  async recordAttempt(kind: string, subject: string): Promise<void> {
    await this.sql.query(`INSERT INTO account_attempts (kind, subject, at) VALUES ($1, $2, $3)`, [kind, subject, this.now()]);
  }

  async clearAttempts(kind: string, subject: string): Promise<void> {
    await this.sql.query(`DELETE FROM account_attempts WHERE kind = $1 AND subject = $2`, [kind, subject]);
  }

  /** Forgets attempts older than a day and links a day past their expiry (the audit trail keeps their history). */
  async purge(): Promise<void> {
    const before = this.now() - 24 * 3600;
    await this.sql.query(`DELETE FROM account_attempts WHERE at < $1`, [before]);
    await this.sql.query(`DELETE FROM account_links WHERE expires_at < $1`, [before]);
  }
}
