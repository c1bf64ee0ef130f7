import type { SqlQuery } from '../../storage/sql';

/** The read side of `audit_trail`: an account's trail in the log's order (the admin API's pages) and
 * its last entries (the console's enterprise page). */

export interface AuditRow {
  readonly action: string;
  readonly subjectType: string;
  readonly subjectId: string;
  readonly actor: string | null;
  readonly at: number;
}

/** Where an entry is in the trail: its event's log position and id (numeric text, as the table keeps
 * the position), what a page goes on after. */
export interface AuditCursor {
  readonly commit: string;
  readonly prepare: string;
  readonly eventId: string;
}

export interface AuditEntry extends AuditRow {
  readonly eventId: string;
  readonly details: unknown;
  readonly cursor: AuditCursor;
}

/** Before every entry: rows written before the trail kept log positions have -1. */
const TRAIL_START: AuditCursor = { commit: '-2', prepare: '-2', eventId: '00000000-0000-0000-0000-000000000000' };

/** A page of an account's trail in the log's order, after `after` (undefined: from the first entry);
 * `more` when a next page exists. */
export async function auditPage(sql: SqlQuery, accountId: string, after: AuditCursor | undefined, limit: number): Promise<{ entries: AuditEntry[]; more: boolean }> {
  const from = after ?? TRAIL_START;
  const rows = await sql.query<{ log_commit: string; log_prepare: string; event_id: string; action: string; subject_type: string; subject_id: string; actor: string | null; details: unknown; at: string }>(
    `SELECT log_commit::text AS log_commit, log_prepare::text AS log_prepare, event_id::text AS event_id, action, subject_type, subject_id, actor, details, at::text AS at
             FROM audit_trail
            WHERE account_id = $1 AND (audit_trail.log_commit, audit_trail.log_prepare, audit_trail.event_id) > ($2::numeric, $3::numeric, $4::uuid)
            ORDER BY audit_trail.log_commit, audit_trail.log_prepare, audit_trail.event_id LIMIT $5`,
    [accountId, from.commit, from.prepare, from.eventId, limit + 1],
  );
  return {
    entries: rows.slice(0, limit).map((r) => ({
      eventId: r.event_id,
      action: r.action,
      subjectType: r.subject_type,
      subjectId: r.subject_id,
      actor: r.actor,
      details: r.details,
      at: Number(r.at),
      cursor: { commit: r.log_commit, prepare: r.log_prepare, eventId: r.event_id },
    })),
    more: rows.length > limit,
  };
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
