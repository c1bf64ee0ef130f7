import type { SqlQuery } from '../storage/sql';

/** What the console reads beyond the admin API's own queries (the call log's rows, usage totals
 * and filters come from src/projections/call-log/queries.ts, as the admin API's do). */

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

/** The account's keys, newest first (deleted ones left out). */
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

export interface DailyUsage {
  /** UTC day, `YYYY-MM-DD`. */
  readonly day: string;
  readonly model: string;
  readonly requests: number;
  readonly cost: bigint;
}

/** Calls and cost per UTC day and model over [from, to). */
export async function dailyUsage(sql: SqlQuery, accountId: string, from: number, to: number): Promise<DailyUsage[]> {
  const rows = await sql.query<{ day: string; model: string; n: string; cost: string }>(
    `SELECT (created_at / 86400)::text AS day, model, count(*)::text AS n, sum(cost + adjustment)::text AS cost
       FROM call_log WHERE account_id = $1 AND created_at >= $2 AND created_at < $3
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [accountId, from, to],
  );
  return rows.map((r) => ({ day: new Date(Number(r.day) * 86400_000).toISOString().slice(0, 10), model: r.model, requests: Number(r.n), cost: BigInt(r.cost) }));
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

/** The enterprises the account is an admin member of (the enterprises projection; the approve and
 * reject commands check the aggregate again). */
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

/** An enterprise's agents in creation order (the admin API's list order), deleted ones included. */
export async function enterpriseAgents(sql: SqlQuery, enterpriseId: string): Promise<AgentRow[]> {
  const rows = await sql.query<{ agent_id: string; settings: { name?: string; model?: string | null; published?: boolean; kb_ids?: string[] }; status: string }>(
    `SELECT agent_id, settings, status FROM agents WHERE enterprise_id = $1 ORDER BY log_commit, log_prepare, created_at, agent_id LIMIT 500`,
    [enterpriseId],
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

/** The enterprise's agent keys (deleted ones left out), newest first. Never the raw key. */
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

export interface KeyRequestRow {
  readonly requestId: string;
  readonly agentId: string;
  readonly name: string;
  readonly requestedBy: string;
  readonly spendCap: bigint;
  readonly createdAt: number;
}

/** The enterprise's pending key requests, oldest first (the admin API's order). */
export async function pendingKeyRequests(sql: SqlQuery, enterpriseId: string): Promise<KeyRequestRow[]> {
  const rows = await sql.query<{ request_id: string; agent_id: string; name: string; requested_by: string; spend_cap: string; created_at: string }>(
    `SELECT request_id, agent_id, name, requested_by, spend_cap::text AS spend_cap, created_at::text AS created_at FROM key_requests
      WHERE enterprise_id = $1 AND status = 'pending' ORDER BY log_commit, log_prepare, created_at, request_id LIMIT 500`,
    [enterpriseId],
  );
  return rows.map((r) => ({ requestId: r.request_id, agentId: r.agent_id, name: r.name, requestedBy: r.requested_by, spendCap: BigInt(r.spend_cap), createdAt: Number(r.created_at) }));
}

export interface AuditRow {
  readonly action: string;
  readonly subjectType: string;
  readonly subjectId: string;
  readonly actor: string | null;
  readonly at: number;
}

/** The last entries of an account's audit trail, newest first. */
export async function auditTail(sql: SqlQuery, accountId: string, limit = 20): Promise<AuditRow[]> {
  const rows = await sql.query<{ action: string; subject_type: string; subject_id: string; actor: string | null; at: string }>(
    `SELECT action, subject_type, subject_id, actor, at::text AS at FROM audit_trail WHERE account_id = $1
      ORDER BY log_commit DESC, log_prepare DESC, event_id DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows.map((r) => ({ action: r.action, subjectType: r.subject_type, subjectId: r.subject_id, actor: r.actor, at: Number(r.at) }));
}
