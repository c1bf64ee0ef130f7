import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { consoleStream, schemaVersion } from '../events/catalog';
import type { EventStore, Position } from '../events/store/port';
import type { Sql } from '../storage/sql';

/** Sign-in links and console sessions: server-side records in the gateway's database (PGlite or
 * Postgres), so every instance sees the same sessions and a sign-out ends a session everywhere.
 * Only SHA-256 digests of the link and session secrets are stored. */
export const CONSOLE_SCHEMA = `
CREATE TABLE IF NOT EXISTS console_links (
  token_hash text PRIMARY KEY,
  account_id text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  used_at bigint
);
CREATE TABLE IF NOT EXISTS console_sessions (
  id_hash text PRIMARY KEY,
  account_id text NOT NULL,
  csrf_token text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  ended_at bigint
);
CREATE INDEX IF NOT EXISTS console_sessions_expiry ON console_sessions (expires_at);
CREATE INDEX IF NOT EXISTS console_links_expiry ON console_links (expires_at);
-- Why the gateway ended a session (account_inactive, password_changed, signed_out_everywhere); null when its holder signed out or it expired.
ALTER TABLE console_sessions ADD COLUMN IF NOT EXISTS end_reason text;
CREATE INDEX IF NOT EXISTS console_sessions_account ON console_sessions (account_id) WHERE ended_at IS NULL;`;

/** A sign-in link is good for 15 minutes and one use (issue 17). */
export const LINK_TTL_S = 15 * 60;
/** A session lasts 8 hours from sign-in, then the holder asks the operator for a new link. */
export const SESSION_TTL_S = 8 * 3600;

export interface ConsoleSession {
  readonly accountId: string;
  readonly csrfToken: string;
  readonly expiresAt: number;
  /** The session's fingerprint, as the audit events name it. */
  readonly fingerprint: string;
}

/** Why the gateway ended a session (its ConsoleSessionEnded `reason`). */
export type EndReason = 'account_inactive' | 'password_changed' | 'signed_out_everywhere';

export type Redeemed =
  | { readonly ok: true; readonly sessionId: string; readonly session: ConsoleSession }
  | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' | 'inactive' };

const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');
const fingerprintOf = (hash: string) => hash.slice(0, 12);
const secret = () => randomBytes(32).toString('base64url');

/** Equal strings, compared in constant time (a CSRF token against the session's). */
export function sameSecret(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y) && a.length === b.length;
}

export class ConsoleSessions {
  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    private readonly now: () => number,
  ) {}

  async migrate(): Promise<void> {
    await this.sql.exec(CONSOLE_SCHEMA);
  }

  /** A new one-time link secret for the account (the caller checked that the account exists). */
  async issueLink(accountId: string, actor: string): Promise<{ token: string; expiresAt: number; position: Position }> {
    const token = secret();
    const hash = digest(token);
    const at = this.now();
    const expiresAt = at + LINK_TTL_S;
    // Recorded first: a link that works is always in the audit trail (one recorded but never stored opens nothing).
    const position = await this.audit(accountId, 'ConsoleLinkIssued', { link: fingerprintOf(hash), expires_at: expiresAt, at }, actor);
    await this.sql.query(`INSERT INTO console_links (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`, [hash, accountId, at, expiresAt]);
    return { token, expiresAt, position };
  }

  /** Uses a link once: the UPDATE claims it atomically, so two redemptions of one link give one session. */
  async redeem(token: string, ip: string, isActive: (accountId: string) => Promise<boolean>): Promise<Redeemed> {
    const hash = digest(token);
    const at = this.now();
    const [claimed] = await this.sql.query<{ account_id: string }>(
      `UPDATE console_links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING account_id`,
      [hash, at],
    );
    if (!claimed) {
      const [row] = await this.sql.query<{ used_at: string | null }>(`SELECT used_at::text AS used_at FROM console_links WHERE token_hash = $1`, [hash]);
      return { ok: false, reason: !row ? 'unknown' : row.used_at !== null ? 'used' : 'expired' };
    }
    // A link issued before its account was deactivated is used up and opens nothing.
    if (!(await isActive(claimed.account_id))) return { ok: false, reason: 'inactive' };
    const { sessionId, session } = await this.start(claimed.account_id);
    // A failure here fails the request: the cookie is never set, so the unaudited session opens nothing.
    await this.audit(session.accountId, 'ConsoleSignedIn', { link: fingerprintOf(hash), session: session.fingerprint, expires_at: session.expiresAt, ip, at }, `console:${session.fingerprint}`);
    return { ok: true, sessionId, session };
  }

  /** A session for a holder who signed in with a password (src/accounts/password-sign-in.ts checked it). */
  async openWithPassword(accountId: string, ip: string): Promise<{ sessionId: string; session: ConsoleSession }> {
    const started = await this.start(accountId);
    const { session } = started;
    await this.audit(accountId, 'ConsolePasswordSignedIn', { session: session.fingerprint, expires_at: session.expiresAt, ip, at: this.now() }, `console:${session.fingerprint}`);
    return started;
  }

  private async start(accountId: string): Promise<{ sessionId: string; session: ConsoleSession }> {
    const at = this.now();
    const sessionId = secret();
    const idHash = digest(sessionId);
    const session: ConsoleSession = { accountId, csrfToken: secret(), expiresAt: at + SESSION_TTL_S, fingerprint: fingerprintOf(idHash) };
    await this.sql.query(`INSERT INTO console_sessions (id_hash, account_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`, [
      idHash,
      session.accountId,
      session.csrfToken,
      at,
      session.expiresAt,
    ]);
    return { sessionId, session };
  }

  /** The live session of a cookie's secret; null when unknown, ended or past its expiry. */
  async session(sessionId: string): Promise<ConsoleSession | null> {
    const hash = digest(sessionId);
    const [row] = await this.sql.query<{ account_id: string; csrf_token: string; expires_at: string }>(
      `SELECT account_id, csrf_token, expires_at::text AS expires_at FROM console_sessions WHERE id_hash = $1 AND ended_at IS NULL AND expires_at > $2`,
      [hash, this.now()],
    );
    return row ? { accountId: row.account_id, csrfToken: row.csrf_token, expiresAt: Number(row.expires_at), fingerprint: fingerprintOf(hash) } : null;
  }

  /** The account of a session the gateway ended because it was deactivated; null for any other cookie. */
  async endedInactive(sessionId: string): Promise<string | null> {
    const [row] = await this.sql.query<{ account_id: string }>(`SELECT account_id FROM console_sessions WHERE id_hash = $1 AND end_reason = 'account_inactive'`, [digest(sessionId)]);
    return row?.account_id ?? null;
  }

  async signOut(sessionId: string): Promise<void> {
    const hash = digest(sessionId);
    const at = this.now();
    const [ended] = await this.sql.query<{ account_id: string }>(`UPDATE console_sessions SET ended_at = $2 WHERE id_hash = $1 AND ended_at IS NULL RETURNING account_id`, [hash, at]);
    if (ended) await this.audit(ended.account_id, 'ConsoleSignedOut', { session: fingerprintOf(hash), at }, `console:${fingerprintOf(hash)}`);
  }

  /** Ends every open session of the account on the server, each recorded as ConsoleSessionEnded:
   * a deactivation (actor `system`), a password reset or change, the holder's "sign out everywhere"
   * (actor the holder's session); idempotent (a second call finds none open). */
  async endAccountSessions(accountId: string, reason: EndReason = 'account_inactive', actor = 'system'): Promise<number> {
    const at = this.now();
    const ended = await this.sql.query<{ id_hash: string }>(
      `UPDATE console_sessions SET ended_at = $2, end_reason = $3 WHERE account_id = $1 AND ended_at IS NULL AND expires_at > $2 RETURNING id_hash`,
      [accountId, at, reason],
    );
    for (const row of ended) await this.audit(accountId, 'ConsoleSessionEnded', { session: fingerprintOf(row.id_hash), reason, at }, actor);
    return ended.length;
  }

  /** Forgets links and sessions a day past their expiry (the audit trail keeps their history). */
  async purge(): Promise<void> {
    const before = this.now() - 24 * 3600;
    await this.sql.query(`DELETE FROM console_links WHERE expires_at < $1`, [before]);
    await this.sql.query(`DELETE FROM console_sessions WHERE expires_at < $1`, [before]);
  }

  private async audit(accountId: string, type: string, data: Record<string, unknown>, actor: string): Promise<Position> {
    const result = await this.store.append(
      consoleStream(accountId),
      [{ id: randomUUID(), type, data, metadata: { actor, schema_version: schemaVersion(type) } }],
      'any',
    );
    return result.position;
  }
}
