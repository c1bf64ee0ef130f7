import { z } from 'zod';
import { PriceSchema } from '../../../config/schema';
import { ChannelGroup } from '../../../events/catalog/codec';
import { Usd, UsageTotals } from './account';

/** The operator's API's answers (`/admin/v1`): accounts, keys, the ledger, the call log, channels, re-rates, enterprises. */

const Unix = z.number().int().describe('Unix seconds.');
const Cursor = z.string().nullable().describe('Pass as the next page’s cursor; null on the last page.');
const Limit = z.number().int().positive().nullable().describe('null: unlimited');

export const Account = z
  .object({
    id: z.string(),
    name: z.string(),
    status: z.string().describe('`active`, `inactive`.'),
    balance_usd: Usd,
    held_usd: Usd,
    available_usd: Usd,
    limits: z.object({ rpm: Limit, concurrency: Limit }),
    group: ChannelGroup.nullable(),
    created_at: Unix,
  })
  .meta({ description: 'An account: its wallet, limits and channel group.' });

const UnavailableAccount = z.object({
  id: z.string(),
  status: z.literal('unavailable'),
  error: z.object({ code: z.literal('account_unavailable'), message: z.string() }),
});
export const AccountList = z
  .object({ data: z.array(z.union([Account, UnavailableAccount])), next_cursor: Cursor })
  .meta({ description: 'Accounts by id; one whose log cannot be read is listed as `unavailable`.' });
export const TopUp = z.object({ topup_id: z.string(), amount_usd: Usd, account: Account }).meta({ description: 'The top-up and the account after it.' });

const KeyFields = {
  id: z.string(),
  account_id: z.string(),
  name: z.string(),
  prefix: z.string(),
  allowed_models: z.array(z.string()).nullable(),
  expires_at: Unix.nullable(),
  enabled: z.boolean(),
  spend_cap_usd: Usd.nullable(),
  group: z.string().nullable(),
  status: z.enum(['none', 'active', 'revoked', 'deleted']),
  revealable: z.boolean(),
  created_at: Unix,
  agent_id: z.string().nullable(),
  last_used_at: Unix.nullable(),
  used_usd: Usd,
};
export const ApiKey = z.object(KeyFields).meta({ description: 'An API key (never the raw key).' });
export const NewApiKey = z
  .object({ ...KeyFields, key: z.string().describe('The raw key: shown here and by reveal only.') })
  .meta({ description: 'A new API key, with the raw key.' });
export const ApiKeyList = z.object({ data: z.array(ApiKey), next_cursor: Cursor }).meta({ description: "An account's keys, oldest first." });
export const Deleted = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ description: 'Deleted.' });
export const RevealedKey = z.object({ id: z.string(), key: z.string() }).meta({ description: 'The raw key, from the vault.' });

export const Ledger = z
  .object({
    account_id: z.string(),
    data: z.array(z.object({ revision: z.number().int(), event_id: z.string(), type: z.string(), data: z.unknown(), created_at: Unix })),
    next_cursor: Cursor,
  })
  .meta({ description: "The wallet's events, in order (amounts in ledger units, as strings)." });

/** A call-log row as the JSON pages give it (src/projections/call-log/queries.ts `LogRow`, without `key_id`). */
const LogRow = z.object({
  id: z.string(),
  created_at: Unix,
  key_name: z.string().nullable(),
  key_prefix: z.string().nullable(),
  model: z.string(),
  status: z.string(),
  error_code: z.string().nullable(),
  error_message: z.string().nullable(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cached_tokens: z.number().int(),
  cache_write_tokens: z.number().int().describe('Input tokens written to the prompt cache (part of input_tokens).'),
  cache_write_1h_tokens: z.number().int().describe('The part of cache_write_tokens written for 1 hour; the rest lived 5 minutes.'),
  unit_count: z.number().nullable(),
  unit_type: z.string().nullable(),
  cost_usd: Usd,
  latency_ms: z.number().int(),
  request_id: z.string(),
  task_id: z.string().nullable(),
  submitted_at: Unix,
  attempts_count: z.number().int(),
  result_urls: z.array(z.string()),
  result_expires_at: Unix.nullable(),
  adjustment_usd: Usd,
  adjustment_reference: z.string().nullable(),
  tool_fee_usd: Usd.nullable(),
  agent_id: z.string().nullable(),
  requested_model: z.string().nullable(),
});
export const LogPage = z.object({ data: z.array(LogRow), next_cursor: Cursor }).meta({ description: 'A page of the call log, newest first.' });

export const AccountUsage = z
  .object({
    account_id: z.string(),
    from: Unix,
    to: Unix,
    key_id: z.string().nullable(),
    agent_id: z.string().nullable(),
    ...UsageTotals.shape,
    by_model: z.array(z.object({ model: z.string(), ...UsageTotals.shape })),
  })
  .meta({ description: "An account's call totals over a window." });

const RerateCosts = { old_cost_usd: Usd, new_cost_usd: Usd, difference_usd: Usd };
export const Rerate = z
  .object({
    object: z.literal('rerate'),
    model: z.string(),
    from: z.number(),
    to: z.number(),
    price: PriceSchema,
    applied: z.boolean(),
    reference: z.string().nullable(),
    unchanged_calls: z.number().int(),
    calls: z.array(z.object({ account_id: z.string(), request_id: z.string(), key_id: z.string().nullable(), submitted_at: Unix, ...RerateCosts })),
    accounts: z.array(z.object({ account_id: z.string(), calls: z.number().int(), ...RerateCosts, outcome: z.enum(['applied', 'already_applied']).optional() })),
    total: z.object(RerateCosts),
  })
  .meta({ description: 'The re-rate: each call’s old and new cost, per account and in total; `applied` says whether the adjustments were recorded.' });

export const ConsoleLink = z.object({ account_id: z.string(), url: z.string(), expires_at: Unix }).meta({ description: 'A one-time console sign-in link.' });

export const Signup = z
  .object({
    account_id: z.string(),
    email: z.string(),
    name: z.string(),
    status: z.string().describe('The account: `active`, `inactive`.'),
    created_at: Unix,
    verified_at: Unix.nullable().describe('When the address was verified; null: not yet.'),
    trial_granted: z.boolean().describe('Whether the trial credit was granted.'),
    signup_ip: z.string(),
  })
  .meta({ description: "An account its holder opened at the console's sign-up." });
export const SignupList = z
  .object({ data: z.array(Signup), next_cursor: z.string().nullable().describe('The `after` of the next page; null: none.') })
  .meta({ description: 'Sign-ups, newest first.' });

export const Channel = z
  .object({
    id: z.string(),
    protocol: z.string(),
    group: z.string().nullable(),
    priority: z.number(),
    weight: z.number(),
    models: z.array(z.string()),
    status: z.enum(['healthy', 'cooling', 'disabled']),
    disabled_by: z.string().nullable(),
    cooling_until: Unix.nullable(),
    last_error: z.string().nullable(),
    last_error_at: Unix.nullable(),
    latency_ms: z.number().nullable(),
    successes: z.number().int(),
    failures: z.number().int(),
    success_rate: z.number().nullable(),
    last_change: z.object({ to: z.string(), cause: z.string(), reason: z.string().nullable(), at: Unix }).nullable(),
  })
  .meta({ description: "A channel's live health and its latest recorded change." });
export const ChannelList = z.object({ data: z.array(Channel) }).meta({ description: 'Every configured channel.' });
export const ChannelProbe = z.object({ probe: z.enum(['ok', 'failed', 'skipped']), channel: Channel }).meta({ description: 'The probe’s outcome and the channel after it.' });
export const ConfigReload = z
  .object({ applied: z.literal(true), digest: z.string(), path: z.string(), channels: z.number().int(), models: z.number().int() })
  .meta({ description: 'The configuration now in force: the SHA-256 of the file, its path, how many channels and models it holds.' });

export const Enterprise = z
  .object({
    account_id: z.string(),
    allowed_models: z.array(z.string()).nullable(),
    default_model: z.string().nullable(),
    members: z.array(z.object({ account_id: z.string(), role: z.string() })),
  })
  .meta({ description: 'An enterprise: its model allow-list, default model and members.' });
export const MemberList = z.object({ data: z.array(z.object({ account_id: z.string(), role: z.string(), since: Unix })) }).meta({ description: "An enterprise's members." });

export const Agent = z
  .looseObject({
    id: z.string(),
    enterprise_id: z.string(),
    creator_account_id: z.string(),
    name: z.string(),
    system_prompt: z.string(),
    model: z.string().nullable().optional(),
    web_search: z.boolean().optional(),
    drawing: z.boolean().optional(),
    kb_ids: z.array(z.string()).optional(),
    temperature: z.number().nullable().optional(),
    published: z.boolean().optional(),
    status: z.string(),
    created_at: Unix,
  })
  .meta({ description: 'An enterprise agent.' });
export const AgentList = z.object({ data: z.array(Agent) }).meta({ description: "An enterprise's agents." });
export const AgentKeyList = z.object({ data: z.array(ApiKey) }).meta({ description: "An agent's keys." });
export const ApprovedKey = z
  .object({ ...KeyFields, key: z.string(), request_id: z.string() })
  .meta({ description: 'The key the approval issued, with the raw key.' });

export const KeyRequest = z
  .object({
    id: z.string(),
    enterprise_id: z.string(),
    agent_id: z.string(),
    name: z.string(),
    requested_by: z.string(),
    spend_cap_usd: Usd,
    status: z.enum(['pending', 'approved', 'rejected']),
    key_id: z.string().nullable(),
    decided_by: z.string().nullable(),
    created_at: Unix,
  })
  .meta({ description: 'A request for an agent key.' });
export const KeyRequestList = z.object({ data: z.array(KeyRequest) }).meta({ description: "An enterprise's key requests." });

export const AuditTrail = z
  .object({
    data: z.array(z.object({ event_id: z.string(), action: z.string(), subject_type: z.string(), subject_id: z.string(), actor: z.string().nullable(), details: z.unknown(), at: Unix })),
    next_cursor: Cursor,
  })
  .meta({ description: "An account's audit trail, in the log's order." });
