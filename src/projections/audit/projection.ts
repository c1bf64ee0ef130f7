import { oneAtATime, type Projection } from '../projection';

/** Append-only record of who changed what: accounts, top-ups, limits, every key
 * action (issue, change, reveal, revoke, delete) and console sign-ins (link issued, signed in,
 * signed out). Money movements are in the ledger. */
export const auditProjection: Projection = {
  name: 'audit',
  streams: ['wallet-', 'key-', 'console-'],
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
CREATE INDEX IF NOT EXISTS audit_by_subject ON audit_trail (subject_id);`,

  // Most events of a wallet are calls' holds: only the audited ones reach the per-event statements.
  applyBatch: (tx, items) => applyAudited(tx, items.filter((item) => AUDITED.has(item.event.type))),
};

const AUDITED = new Set([
  'AccountOpened',
  'WalletToppedUp',
  'AccountDeactivated',
  'AccountReactivated',
  'AccountLimitsSet',
  'KeyIssued',
  'KeyUpdated',
  'KeyRevealed',
  'KeyRevoked',
  'KeyDeleted',
  'ConsoleLinkIssued',
  'ConsoleSignedIn',
  'ConsoleSignedOut',
]);

const applyAudited = oneAtATime(async (tx, event, recorded) => {
  const isKey = recorded.streamId.startsWith('key-');
  const isConsole = recorded.streamId.startsWith('console-');
  const subjectId = recorded.streamId.slice(recorded.streamId.indexOf('-') + 1);
  let accountId = subjectId;
  if (event.type === 'KeyIssued') accountId = event.data.account_id;
  else if (isKey) {
    const [row] = await tx.query<{ account_id: string }>(
      `SELECT account_id FROM audit_trail WHERE subject_id = $1 AND action = 'KeyIssued'`,
      [subjectId],
    );
    accountId = row?.account_id ?? '';
  }
  const { at, ...details } = event.data as { at: number } & Record<string, unknown>;
  // The key hash is an authentication secret's fingerprint; the audit shows the prefix only.
  delete details.hash;
  const actor = typeof recorded.metadata.actor === 'string' ? recorded.metadata.actor : null;
  await tx.query(
    `INSERT INTO audit_trail (event_id, account_id, subject_type, subject_id, action, details, actor, at)
     VALUES ($1::uuid, $2, $3, $4, $5, $6::jsonb, $7, $8)`,
    [recorded.id, accountId, isKey ? 'key' : isConsole ? 'console' : 'account', subjectId, event.type, JSON.stringify(details, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)), actor, at],
  );
});
