import type { SqlQuery } from '../../storage/sql';

/** The read side of `api_keys` and `key_activity`, and the one write of `key_activity` (the request
 * path's). A key's spend comes from `key_spend`, the accounts projection's table, joined here because
 * the rows are keys. Decisions never read these tables: they read the key's aggregate. */

/** The authentication lookup's row: the key a SHA-256 hash belongs to. */
export interface KeyOfHash {
  readonly key_id: string;
  readonly account_id: string;
}

/** The key of a hash, as a list of zero or one row. The driver's own promise, with no wrapper: the
 * authentication's lookup (a key this process has not cached yet) awaits it once, as it awaited the
 * query. */
export const keyByHash = (sql: SqlQuery, hash: string): Promise<KeyOfHash[]> =>
  sql.query<KeyOfHash>('SELECT key_id, account_id FROM api_keys WHERE key_hash = $1', [hash]);

/** Records that a key was used at `at` (never moving its time back): the request path's write, kept out
 * of the projection so that a rebuild keeps it. The driver's own promise, for the caller to catch. */
export const recordKeyUse = (sql: SqlQuery, keyId: string, at: number): Promise<unknown[]> =>
  sql.query(
    `INSERT INTO key_activity (key_id, last_used_at) VALUES ($1, $2)
           ON CONFLICT (key_id) DO UPDATE SET last_used_at = GREATEST(key_activity.last_used_at, EXCLUDED.last_used_at)`,
    [keyId, at],
  );

export interface KeyUse {
  readonly lastUsedAt: number | null;
  readonly spent: bigint;
}

/** When each key was last used and what it has spent, by key id; every id asked for is in the map
 * (a key never used: null and 0). No query for no ids. */
export async function keyUse(sql: SqlQuery, keyIds: readonly string[]): Promise<Map<string, KeyUse>> {
  if (keyIds.length === 0) return new Map();
  const rows = await sql.query<{ key_id: string; last_used_at: string | null; spent: string | null }>(
    `SELECT k.id AS key_id, a.last_used_at::text AS last_used_at, s.spent::text AS spent
           FROM unnest($1::text[]) AS k(id)
           LEFT JOIN key_activity a ON a.key_id = k.id
           LEFT JOIN key_spend s ON s.key_id = k.id`,
    [keyIds],
  );
  return new Map(rows.map((r) => [r.key_id, { lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at), spent: BigInt(r.spent ?? '0') }]));
}

/** Where a page of an account's keys starts: after this key (the previous page's last). */
export interface KeyCursor {
  readonly createdAt: string;
  readonly keyId: string;
}

/** A page of an account's keys, oldest first (deleted ones left out), after `after`: their ids and
 * creation times (as the database writes them, for the next cursor); `more` when a next page exists.
 * Ordered by `created_at` as the text the statement returns: as by number while the times have ten digits. */
export async function accountKeyPage(
  sql: SqlQuery,
  accountId: string,
  after: KeyCursor | undefined,
  limit: number,
): Promise<{ keys: Array<{ keyId: string; createdAt: string }>; more: boolean }> {
  const rows = await sql.query<{ key_id: string; created_at: string }>(
    `SELECT key_id, created_at::text AS created_at FROM api_keys
          WHERE account_id = $1 AND status <> 'deleted' AND (created_at, key_id) > ($2::bigint, $3::text)
          ORDER BY created_at, key_id LIMIT $4`,
    [accountId, after?.createdAt ?? '-1', after?.keyId ?? '', limit + 1],
  );
  return { keys: rows.slice(0, limit).map((r) => ({ keyId: r.key_id, createdAt: r.created_at })), more: rows.length > limit };
}

/** An agent's keys, oldest first (deleted ones left out): their ids. */
export async function agentKeyIds(sql: SqlQuery, agentId: string): Promise<string[]> {
  const rows = await sql.query<{ key_id: string }>(`SELECT key_id FROM api_keys WHERE agent_id = $1 AND status <> 'deleted' ORDER BY created_at, key_id`, [agentId]);
  return rows.map((r) => r.key_id);
}

export interface KeyRow {
  readonly keyId: string;
  readonly name: string;
  readonly prefix: string;
  readonly allowedModels: string[] | null;
  readonly expiresAt: number | null;
  readonly enabled: boolean;
  readonly spendCap: bigint | null;
  readonly status: string;
  readonly revealable: boolean;
  readonly createdAt: number;
  readonly spent: bigint;
  readonly lastUsedAt: number | null;
}

/** The account's keys with their spend and last use, newest first (deleted ones left out; at most 500). */
export async function accountKeys(sql: SqlQuery, accountId: string): Promise<KeyRow[]> {
  const rows = await sql.query<{
    key_id: string;
    name: string;
    prefix: string;
    allowed_models: string[] | null;
    expires_at: string | null;
    enabled: boolean;
    spend_cap: string | null;
    status: string;
    revealable: boolean;
    created_at: string;
    spent: string | null;
    last_used_at: string | null;
  }>(
    `SELECT k.key_id, k.name, k.prefix, k.allowed_models, k.expires_at::text AS expires_at, k.enabled, k.spend_cap::text AS spend_cap,
            k.status, k.revealable, k.created_at::text AS created_at, s.spent::text AS spent, a.last_used_at::text AS last_used_at
       FROM api_keys k
       LEFT JOIN key_spend s ON s.key_id = k.key_id
       LEFT JOIN key_activity a ON a.key_id = k.key_id
      WHERE k.account_id = $1 AND k.status <> 'deleted'
      ORDER BY k.created_at DESC, k.key_id DESC
      LIMIT 500`,
    [accountId],
  );
  return rows.map((r) => ({
    keyId: r.key_id,
    name: r.name,
    prefix: r.prefix,
    allowedModels: r.allowed_models,
    expiresAt: r.expires_at === null ? null : Number(r.expires_at),
    enabled: r.enabled,
    spendCap: r.spend_cap === null ? null : BigInt(r.spend_cap),
    status: r.status,
    revealable: r.revealable,
    createdAt: Number(r.created_at),
    spent: BigInt(r.spent ?? '0'),
    lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
  }));
}

export interface AgentKeyRow {
  readonly keyId: string;
  readonly name: string;
  readonly prefix: string;
  readonly agentId: string;
  readonly status: string;
  readonly enabled: boolean;
  readonly spendCap: bigint | null;
  readonly spent: bigint;
}

/** The enterprise's agent keys with their spend (deleted ones left out), newest first; at most 500.
 * Never the raw key. */
export async function enterpriseAgentKeys(sql: SqlQuery, enterpriseId: string): Promise<AgentKeyRow[]> {
  const rows = await sql.query<{ key_id: string; name: string; prefix: string; agent_id: string; status: string; enabled: boolean; spend_cap: string | null; spent: string | null }>(
    `SELECT k.key_id, k.name, k.prefix, k.agent_id, k.status, k.enabled, k.spend_cap::text AS spend_cap, s.spent::text AS spent
       FROM api_keys k LEFT JOIN key_spend s ON s.key_id = k.key_id
      WHERE k.account_id = $1 AND k.agent_id IS NOT NULL AND k.status <> 'deleted'
      ORDER BY k.created_at DESC, k.key_id DESC LIMIT 500`,
    [enterpriseId],
  );
  return rows.map((r) => ({
    keyId: r.key_id,
    name: r.name,
    prefix: r.prefix,
    agentId: r.agent_id,
    status: r.status,
    enabled: r.enabled,
    spendCap: r.spend_cap === null ? null : BigInt(r.spend_cap),
    spent: BigInt(r.spent ?? '0'),
  }));
}
