import { z } from 'zod';
import { Timestamp, Units, defineEvent, type EventOf } from './codec';

/** An enterprise's settings and members: `enterprise-{accountId}` (the enterprise is an account:
 * its wallet pays for its agents). */
export const enterpriseStream = (accountId: string) => `enterprise-${accountId}`;
/** One agent: `agent-{agentId}`. */
export const agentStream = (agentId: string) => `agent-${agentId}`;
/** One employee's request for an agent key: `keyreq-{requestId}`. */
export const keyRequestStream = (requestId: string) => `keyreq-${requestId}`;

export const MemberRole = z.enum(['admin', 'member']);
export type MemberRole = z.output<typeof MemberRole>;

export const EnterpriseConfigured = defineEvent(
  'EnterpriseConfigured',
  z.object({ account_id: z.string(), allowed_models: z.array(z.string()).nullable(), default_model: z.string().nullable(), at: Timestamp }),
);
export const MemberSet = defineEvent('MemberSet', z.object({ member_account_id: z.string(), role: MemberRole, at: Timestamp }));
export const MemberRemoved = defineEvent('MemberRemoved', z.object({ member_account_id: z.string(), at: Timestamp }));

export const AgentSettings = z.object({
  name: z.string(),
  system_prompt: z.string(),
  /** The locked model; null: the enterprise default, then the platform default. */
  model: z.string().nullable(),
  web_search: z.boolean(),
  drawing: z.boolean(),
  /** Knowledge bases as the creator names them (`default` = the creator's personal base). */
  kb_ids: z.array(z.string()),
  temperature: z.number().min(0).max(2).nullable(),
  published: z.boolean(),
});
export type AgentSettings = z.output<typeof AgentSettings>;

export const AgentCreated = defineEvent(
  'AgentCreated',
  AgentSettings.extend({ agent_id: z.string(), enterprise_id: z.string(), creator_account_id: z.string(), at: Timestamp }),
);
export const AgentUpdated = defineEvent('AgentUpdated', z.object({ changes: AgentSettings.partial(), at: Timestamp }));
export const AgentDeleted = defineEvent('AgentDeleted', z.object({ at: Timestamp }));

export const KeyRequested = defineEvent(
  'KeyRequested',
  z.object({
    request_id: z.string(),
    agent_id: z.string(),
    enterprise_id: z.string(),
    name: z.string(),
    requested_by: z.string(),
    spend_cap: Units,
    at: Timestamp,
  }),
);
export const KeyRequestApproved = defineEvent('KeyRequestApproved', z.object({ approved_by: z.string(), key_id: z.string(), at: Timestamp }));
export const KeyRequestRejected = defineEvent('KeyRequestRejected', z.object({ rejected_by: z.string(), reason: z.string(), at: Timestamp }));

export const enterpriseEvents = [
  EnterpriseConfigured,
  MemberSet,
  MemberRemoved,
  AgentCreated,
  AgentUpdated,
  AgentDeleted,
  KeyRequested,
  KeyRequestApproved,
  KeyRequestRejected,
] as const;

export type EnterpriseEvent = EventOf<(typeof enterpriseEvents)[number]>;
