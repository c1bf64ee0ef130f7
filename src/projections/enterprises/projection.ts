import { oneAtATime, type Projection } from '../projection';

/** Enterprises, their members, agents and key requests, as the admin API and the console list them.
 * Decisions never read these tables: they read the aggregates. */
export const enterprisesProjection: Projection = {
  name: 'enterprises',
  streams: ['enterprise-', 'agent-', 'keyreq-'],
  tables: ['enterprises', 'enterprise_members', 'agents', 'key_requests'],
  schema: `
CREATE TABLE IF NOT EXISTS enterprises (
  account_id text PRIMARY KEY,
  allowed_models jsonb,
  default_model text,
  updated_at bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS enterprise_members (
  enterprise_id text NOT NULL,
  member_account_id text NOT NULL,
  role text NOT NULL,
  since bigint NOT NULL,
  PRIMARY KEY (enterprise_id, member_account_id)
);
CREATE TABLE IF NOT EXISTS agents (
  agent_id text PRIMARY KEY,
  enterprise_id text NOT NULL,
  creator_account_id text NOT NULL,
  settings jsonb NOT NULL,
  status text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS agents_by_enterprise ON agents (enterprise_id, created_at);
CREATE TABLE IF NOT EXISTS key_requests (
  request_id text PRIMARY KEY,
  enterprise_id text NOT NULL,
  agent_id text NOT NULL,
  name text NOT NULL,
  requested_by text NOT NULL,
  spend_cap bigint NOT NULL,
  status text NOT NULL,
  key_id text,
  decided_by text,
  reason text,
  created_at bigint NOT NULL,
  decided_at bigint
);
CREATE INDEX IF NOT EXISTS key_requests_by_enterprise ON key_requests (enterprise_id, status, created_at);
-- Where the creating event is in the log: lists show them in its order (several may share a second).
ALTER TABLE agents ADD COLUMN IF NOT EXISTS log_commit numeric NOT NULL DEFAULT -1;
ALTER TABLE agents ADD COLUMN IF NOT EXISTS log_prepare numeric NOT NULL DEFAULT -1;
ALTER TABLE key_requests ADD COLUMN IF NOT EXISTS log_commit numeric NOT NULL DEFAULT -1;
ALTER TABLE key_requests ADD COLUMN IF NOT EXISTS log_prepare numeric NOT NULL DEFAULT -1;`,

  applyBatch: oneAtATime(async (tx, event, recorded) => {
    const id = recorded.streamId.slice(recorded.streamId.indexOf('-') + 1);
    switch (event.type) {
      case 'EnterpriseConfigured': {
        const d = event.data;
        await tx.query(
          `INSERT INTO enterprises (account_id, allowed_models, default_model, updated_at) VALUES ($1, $2::jsonb, $3, $4)
           ON CONFLICT (account_id) DO UPDATE SET allowed_models = EXCLUDED.allowed_models, default_model = EXCLUDED.default_model, updated_at = EXCLUDED.updated_at`,
          [id, d.allowed_models === null ? null : JSON.stringify(d.allowed_models), d.default_model, d.at],
        );
        return;
      }
      case 'MemberSet':
        await tx.query(
          `INSERT INTO enterprise_members (enterprise_id, member_account_id, role, since) VALUES ($1, $2, $3, $4)
           ON CONFLICT (enterprise_id, member_account_id) DO UPDATE SET role = EXCLUDED.role`,
          [id, event.data.member_account_id, event.data.role, event.data.at],
        );
        return;
      case 'MemberRemoved':
        await tx.query('DELETE FROM enterprise_members WHERE enterprise_id = $1 AND member_account_id = $2', [id, event.data.member_account_id]);
        return;
      case 'AgentCreated': {
        const { agent_id, enterprise_id, creator_account_id, at, ...settings } = event.data;
        await tx.query(
          `INSERT INTO agents (agent_id, enterprise_id, creator_account_id, settings, status, created_at, updated_at, log_commit, log_prepare)
           VALUES ($1, $2, $3, $4::jsonb, 'active', $5, $5, $6::numeric, $7::numeric)`,
          [agent_id, enterprise_id, creator_account_id, JSON.stringify(settings), at, String(recorded.position.commit), String(recorded.position.prepare)],
        );
        return;
      }
      case 'AgentUpdated':
        await tx.query('UPDATE agents SET settings = settings || $2::jsonb, updated_at = $3 WHERE agent_id = $1', [id, JSON.stringify(event.data.changes), event.data.at]);
        return;
      case 'AgentDeleted':
        await tx.query(`UPDATE agents SET status = 'deleted', updated_at = $2 WHERE agent_id = $1`, [id, event.data.at]);
        return;
      case 'KeyRequested': {
        const d = event.data;
        await tx.query(
          `INSERT INTO key_requests (request_id, enterprise_id, agent_id, name, requested_by, spend_cap, status, created_at, log_commit, log_prepare)
           VALUES ($1, $2, $3, $4, $5, $6::bigint, 'pending', $7, $8::numeric, $9::numeric)`,
          [d.request_id, d.enterprise_id, d.agent_id, d.name, d.requested_by, String(d.spend_cap), d.at, String(recorded.position.commit), String(recorded.position.prepare)],
        );
        return;
      }
      case 'KeyRequestApproved':
        await tx.query(`UPDATE key_requests SET status = 'approved', key_id = $2, decided_by = $3, decided_at = $4 WHERE request_id = $1`, [
          id,
          event.data.key_id,
          event.data.approved_by,
          event.data.at,
        ]);
        return;
      case 'KeyRequestRejected':
        await tx.query(`UPDATE key_requests SET status = 'rejected', decided_by = $2, reason = $3, decided_at = $4 WHERE request_id = $1`, [
          id,
          event.data.rejected_by,
          event.data.reason,
          event.data.at,
        ]);
        return;
      default:
        return;
    }
  }),
};
