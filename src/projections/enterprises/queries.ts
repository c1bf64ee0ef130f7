import type { SqlQuery } from '../../storage/sql';

/** The read side of `enterprise_members`, `agents` and `key_requests`: the lists of the admin API and
 * of the console's enterprise page. The admin API shows each agent and request from its aggregate; the
 * console from these rows. The approve and reject commands check the aggregates again. */

export interface MemberRow {
  readonly accountId: string;
  readonly role: string;
  readonly since: number;
}

/** An enterprise's members, longest-standing first (ordered by `since` as the text the statement returns:
 * as by number while the times have ten digits). */
export async function enterpriseMembers(sql: SqlQuery, enterpriseId: string): Promise<MemberRow[]> {
  const rows = await sql.query<{ member_account_id: string; role: string; since: string }>(
    'SELECT member_account_id, role, since::text AS since FROM enterprise_members WHERE enterprise_id = $1 ORDER BY since, member_account_id',
    [enterpriseId],
  );
  return rows.map((r) => ({ accountId: r.member_account_id, role: r.role, since: Number(r.since) }));
}

/** The enterprises the account is an admin member of (at most 50). */
export async function enterprisesAdministered(sql: SqlQuery, accountId: string): Promise<string[]> {
  const rows = await sql.query<{ enterprise_id: string }>(
    `SELECT enterprise_id FROM enterprise_members WHERE member_account_id = $1 AND role = 'admin' ORDER BY since, enterprise_id LIMIT 50`,
    [accountId],
  );
  return rows.map((r) => r.enterprise_id);
}

export interface AgentRow {
  readonly agentId: string;
  readonly name: string;
  readonly model: string | null;
  readonly published: boolean;
  readonly kbIds: readonly string[];
  readonly deleted: boolean;
}

/** An enterprise's agents in the log's order of their creation, deleted ones included; at most `limit`
 * (null: all). */
export async function enterpriseAgents(sql: SqlQuery, enterpriseId: string, limit: number | null): Promise<AgentRow[]> {
  const rows = await sql.query<{ agent_id: string; settings: { name?: string; model?: string | null; published?: boolean; kb_ids?: string[] }; status: string }>(
    `SELECT agent_id, settings, status FROM agents WHERE enterprise_id = $1 ORDER BY log_commit, log_prepare, created_at, agent_id LIMIT $2`,
    [enterpriseId, limit],
  );
  return rows.map((r) => ({
    agentId: r.agent_id,
    name: r.settings.name ?? r.agent_id,
    model: r.settings.model ?? null,
    published: r.settings.published !== false,
    kbIds: r.settings.kb_ids ?? [],
    deleted: r.status === 'deleted',
  }));
}

export interface KeyRequestRow {
  readonly requestId: string;
  readonly agentId: string;
  readonly name: string;
  readonly requestedBy: string;
  readonly spendCap: bigint;
  readonly createdAt: number;
}

export type KeyRequestStatus = 'pending' | 'approved' | 'rejected';

/** An enterprise's key requests of a status (`all`: every one) in the log's order of their making,
 * oldest first; at most `limit` (null: all). */
export async function keyRequests(sql: SqlQuery, enterpriseId: string, status: KeyRequestStatus | 'all', limit: number | null): Promise<KeyRequestRow[]> {
  const rows = await sql.query<{ request_id: string; agent_id: string; name: string; requested_by: string; spend_cap: string; created_at: string }>(
    `SELECT request_id, agent_id, name, requested_by, spend_cap::text AS spend_cap, created_at::text AS created_at FROM key_requests
      WHERE enterprise_id = $1 AND ($2 = 'all' OR status = $2) ORDER BY log_commit, log_prepare, created_at, request_id LIMIT $3`,
    [enterpriseId, status, limit],
  );
  return rows.map((r) => ({ requestId: r.request_id, agentId: r.agent_id, name: r.name, requestedBy: r.requested_by, spendCap: BigInt(r.spend_cap), createdAt: Number(r.created_at) }));
}
