import { oneAtATime, type Projection } from '../projection';

/** Append-only record of who changed what: accounts, top-ups, limits, every key action (issue,
 * change, reveal, revoke, delete), and the enterprise's: settings, members, agents, key requests
 * (request, approve, reject) and escrows (funded, returned); console sign-ins (link issued, signed in,
 * signed out) and a holder's own account (sign-up, mails sent, verification, password sign-ins and their
 * refusals, resets and changes). Other money movements are in the ledger.
 * Rows keep their event's position in the log: the trail's order (several actions may share a second),
 * the same after a rebuild. */
export const auditProjection: Projection = {
  name: 'audit',
  streams: ['wallet-', 'key-', 'console-', 'enterprise-', 'agent-', 'keyreq-'],
  tables: ['audit_trail'],
  schema: `
CREATE TABLE IF NOT EXISTS audit_trail (
  event_id uuid PRIMARY KEY,
  account_id text NOT NULL,
  subject_type text NOT NULL,
  subject_id text NOT NULL,
  action text NOT NULL,
  details jsonb NOT NULL,
  actor text,
  at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_account ON audit_trail (account_id, at);
CREATE INDEX IF NOT EXISTS audit_by_subject ON audit_trail (subject_id);
-- Where the event is in the log (rows written before these columns have -1: by \`at\` among themselves).
ALTER TABLE audit_trail ADD COLUMN IF NOT EXISTS log_commit numeric NOT NULL DEFAULT -1;
ALTER TABLE audit_trail ADD COLUMN IF NOT EXISTS log_prepare numeric NOT NULL DEFAULT -1;
CREATE INDEX IF NOT EXISTS audit_by_account_log ON audit_trail (account_id, log_commit, log_prepare);`,

  // Most events of a wallet are calls' holds: only the audited ones reach the per-event statements.
  applyBatch: (tx, items) => applyAudited(tx, items.filter((item) => AUDITED.has(item.event.type))),
};

const AUDITED = new Set([
  'AccountOpened',
  'WalletToppedUp',
  'WalletDebited',
  'AccountDeactivated',
  'AccountReactivated',
  'AccountLimitsSet',
  'AccountGroupSet',
  'KeyIssued',
  'KeyUpdated',
  'KeyRevealed',
  'KeyRevoked',
  'KeyDeleted',
  'ConsoleLinkIssued',
  'ConsoleSignedIn',
  'ConsoleSignedOut',
  'ConsoleSessionEnded',
  'AccountSignedUp',
  'AccountMailSent',
  'AccountSignUpRepeated',
  'AccountEmailVerified',
  'ConsolePasswordSignedIn',
  'ConsoleSignInRefused',
  'PasswordResetRequested',
  'PasswordChanged',
  'AccountEmailChangeRequested',
  'AccountEmailChanged',
  'EscrowFunded',
  'EscrowReturned',
  'EnterpriseConfigured',
  'MemberSet',
  'MemberRemoved',
  'AgentCreated',
  'AgentUpdated',
  'AgentDeleted',
  'KeyRequested',
  'KeyRequestApproved',
  'KeyRequestRejected',
]);

/** The audit's subject type of each stream category. */
const SUBJECTS: ReadonlyArray<readonly [string, string]> = [
  ['key-', 'key'],
  ['wallet-', 'account'],
  ['enterprise-', 'enterprise'],
  ['agent-', 'agent'],
  ['keyreq-', 'key_request'],
  ['console-', 'console'],
];

const applyAudited = oneAtATime(async (tx, event, recorded) => {
  const [prefix, subjectType] = SUBJECTS.find(([p]) => recorded.streamId.startsWith(p))!;
  const subjectId = recorded.streamId.slice(prefix.length);
  // The account whose trail it is: the stream's own (wallet, enterprise), or the one its first event named.
  let accountId = subjectId;
  if (event.type === 'KeyIssued') accountId = event.data.account_id;
  else if (event.type === 'AgentCreated' || event.type === 'KeyRequested') accountId = event.data.enterprise_id;
  else if (subjectType === 'key' || subjectType === 'agent' || subjectType === 'key_request') {
    const [row] = await tx.query<{ account_id: string }>(
      `SELECT account_id FROM audit_trail WHERE subject_id = $1 AND action IN ('KeyIssued', 'AgentCreated', 'KeyRequested')`,
      [subjectId],
    );
    accountId = row?.account_id ?? '';
  }
  const { at, ...details } = event.data as { at: number } & Record<string, unknown>;
  // The key hash is an authentication secret's fingerprint; the audit shows the prefix only.
  delete details.hash;
  const actor = typeof recorded.metadata.actor === 'string' ? recorded.metadata.actor : null;
  await tx.query(
    `INSERT INTO audit_trail (event_id, account_id, subject_type, subject_id, action, details, actor, at, log_commit, log_prepare)
     VALUES ($1::uuid, $2, $3, $4, $5, $6::jsonb, $7, $8, $9::numeric, $10::numeric)`,
    [recorded.id, accountId, subjectType, subjectId, event.type, JSON.stringify(details, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)), actor, at, String(recorded.position.commit), String(recorded.position.prepare)],
  );
});
