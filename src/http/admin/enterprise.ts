import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AgentState } from '../../commands/enterprise/agent';
import type { EnterpriseState } from '../../commands/enterprise/enterprise';
import type { Enterprises } from '../../commands/enterprise/service';
import type { KeyRequestState } from '../../commands/enterprise/key-request';
import type { ModelRegistry } from '../../config/registry';
import { UsdString } from '../../config/schema';
import type { AgentSettings } from '../../events/catalog';
import type { Position } from '../../events/store/port';
import { formatUsd, parseUsd } from '../../money/usd';
import { auditPage } from '../../projections/audit/queries';
import { enterpriseAgents, enterpriseMembers, keyRequests } from '../../projections/enterprises/queries';
import { agentKeyIds } from '../../projections/keys/queries';
import type { KnowledgeQueries } from '../../projections/knowledge/queries';
import type { ProjectionRunner } from '../../projections/runner/runner';
import type { Sql } from '../../storage/sql';
import { pageSizeQuery } from '../intake/numbers';
import type { RouteDoc } from '../openapi/route-doc';
import { AdminError, fromDomain, parse } from './admin-error';
import type { AdminReplay } from './idempotency';
import { operatorText } from './operator-text';

export interface EnterpriseAdminOptions {
  readonly enterprises: Enterprises;
  readonly runner: ProjectionRunner;
  readonly sql: Sql;
  readonly registry: ModelRegistry;
  readonly knowledgeQueries: KnowledgeQueries;
  /** The key views of routes.ts (one shape for every key). */
  readonly keyView: (keyId: string) => Promise<Record<string, unknown>>;
  readonly newKeyReplay: AdminReplay;
}

const Id = z.string().min(1).max(100);
const Amount = UsdString.refine((v) => parseUsd(v) > 0n && parseUsd(v) <= parseUsd('1000000000'), { message: 'above 0 and at most 1000000000 USD' });
const ModelId = z.string().min(1).max(200);
const Configure = z.object({ allowed_models: z.array(ModelId).max(1000).nullable(), default_model: ModelId.nullable().optional() }).strict();
const Member = z.object({ role: z.enum(['admin', 'member']) }).strict();
const AgentFields = z.object({
  name: operatorText(200),
  system_prompt: z.string().max(100_000),
  model: ModelId.nullable().optional(),
  web_search: z.boolean().optional(),
  drawing: z.boolean().optional(),
  kb_ids: z.array(z.string().min(1).max(64)).max(20).optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  published: z.boolean().optional(),
});
const CreateAgent = AgentFields.extend({ creator_account_id: Id }).strict();
const PatchAgent = AgentFields.partial().strict();
const IssueKey = z.object({ name: operatorText(200), issued_by: Id, spend_cap_usd: Amount.nullable().optional() }).strict();
const RequestKey = z.object({ name: operatorText(200), requested_by: Id, spend_cap_usd: Amount }).strict();
const Approve = z.object({ approved_by: Id }).strict();
const Reject = z.object({ rejected_by: Id, reason: z.string().max(500).optional() }).strict();
const RequestsQuery = z.looseObject({ status: z.enum(['pending', 'approved', 'rejected', 'all']).optional().describe('Default: all.') });
const AuditQuery = z.looseObject({
  limit: pageSizeQuery(100, 1000),
  after: z
    .string()
    .regex(/^-?\d{1,20}_-?\d{1,20}_[0-9a-f-]{36}$/, 'is not a cursor this API returned')
    .optional()
    .describe('The `next_cursor` of the previous page.'),
});

const doc = (operationId: string, summary: string, responses: RouteDoc['responses'], extra: Partial<RouteDoc> = {}): RouteDoc => ({
  operationId,
  summary,
  tags: ['admin-enterprise'],
  responses,
  ...extra,
});
const ENTERPRISE = '`{account_id, allowed_models, default_model, members: [{account_id, role}]}`.';
const AGENT = '`{id, enterprise_id, creator_account_id, name, system_prompt, model, web_search, drawing, kb_ids, temperature, published, status, created_at}`.';
const REQUEST = '`{id, enterprise_id, agent_id, name, requested_by, spend_cap_usd, status, key_id, decided_by, created_at}`.';

export function enterpriseView(state: EnterpriseState) {
  return {
    account_id: state.accountId,
    allowed_models: state.allowedModels,
    default_model: state.defaultModel,
    members: [...state.members.entries()].map(([account_id, role]) => ({ account_id, role })).sort((a, b) => a.account_id.localeCompare(b.account_id)),
  };
}

export function agentView(state: AgentState) {
  return {
    id: state.agentId,
    enterprise_id: state.enterpriseId,
    creator_account_id: state.creatorAccountId,
    ...state.settings,
    status: state.status,
    created_at: state.createdAt,
  };
}

function requestView(state: KeyRequestState) {
  return {
    id: state.requestId,
    enterprise_id: state.enterpriseId,
    agent_id: state.agentId,
    name: state.name,
    requested_by: state.requestedBy,
    spend_cap_usd: formatUsd(state.spendCap),
    status: state.status,
    key_id: state.keyId,
    decided_by: state.decidedBy,
    created_at: state.createdAt,
  };
}

/** DESIGN.md's "Enterprise agents" endpoints, and the lists a console needs (docs/agents.md). */
export function enterpriseAdminRoutes(options: EnterpriseAdminOptions) {
  const { enterprises, runner, sql, registry, knowledgeQueries } = options;
  const settled = (position: Position | null) => runner.waitFor(position);
  const check = <T extends { ok: boolean }>(result: T): Extract<T, { ok: true }> => {
    if (!result.ok) throw fromDomain((result as unknown as { error: { code: string; message: string } }).error);
    return result as Extract<T, { ok: true }>;
  };

  async function existingEnterprise(accountId: string) {
    const state = await enterprises.enterprise(accountId);
    if (!state.exists) throw new AdminError(404, 'enterprise_not_found', `account ${accountId} is not an enterprise`);
    return state;
  }

  async function existingAgent(agentId: string) {
    const state = await enterprises.agent(agentId);
    if (state.status !== 'active') throw new AdminError(404, 'agent_not_found', `agent ${agentId} not found`);
    return state;
  }

  /** An agent's model must be in the catalogue and on the enterprise's allow-list; its knowledge
   * bases readable by its creator. */
  async function checkAgent(enterprise: EnterpriseState, creator: string, fields: Partial<AgentSettings>) {
    if (fields.model != null) {
      const model = registry.resolve(fields.model);
      if (!model) throw new AdminError(400, 'invalid_request', `model: unknown model id ${fields.model}`);
      if (enterprise.allowedModels !== null && !enterprise.allowedModels.includes(model.id))
        throw new AdminError(400, 'invalid_request', `model: ${model.id} is not on the enterprise's allow-list`);
    }
    if (fields.kb_ids?.length) {
      const readable = new Set((await knowledgeQueries.readableKbs(creator)).map((k) => k.kbId));
      const unreadable = fields.kb_ids.filter((id) => !readable.has(id));
      if (unreadable.length) throw new AdminError(400, 'kb_not_readable', `kb_ids: not readable by the agent's creator ${creator}: ${unreadable.join(', ')}`);
    }
  }

  return async (app: FastifyInstance) => {
    app.put<{ Params: { id: string } }>(
      '/accounts/:id/enterprise',
      { config: { openapi: doc('configureEnterprise', 'Make an account an enterprise, or change its model allow-list and default model', { 200: { description: ENTERPRISE } }, { body: { json: Configure } }) } },
      async (request) => {
        const body = parse(Configure, request.body);
        const models = body.allowed_models?.map((m) => registry.resolve(m)?.id ?? m) ?? null;
        const unknown = [...(body.allowed_models ?? []), ...(body.default_model ? [body.default_model] : [])].filter((m) => !registry.resolve(m));
        if (unknown.length) throw new AdminError(400, 'invalid_request', `unknown model ids: ${unknown.join(', ')}`);
        const defaultModel = body.default_model ? registry.resolve(body.default_model)!.id : null;
        const result = check(await enterprises.configure(request.params.id, models, defaultModel));
        await settled(result.position);
        return enterpriseView(result.state);
      },
    );

    app.get<{ Params: { id: string } }>(
      '/accounts/:id/enterprise',
      { config: { openapi: doc('getEnterprise', 'An enterprise: settings and members', { 200: { description: ENTERPRISE } }) } },
      async (request) => enterpriseView(await existingEnterprise(request.params.id)),
    );

    app.put<{ Params: { id: string; member: string } }>(
      '/accounts/:id/members/:member',
      { config: { openapi: doc('setEnterpriseMember', 'Add a member, or change its role', { 200: { description: ENTERPRISE } }, { body: { json: Member } }) } },
      async (request) => {
        const body = parse(Member, request.body);
        const result = check(await enterprises.setMember(request.params.id, request.params.member, body.role));
        await settled(result.position);
        return enterpriseView(result.state);
      },
    );

    app.delete<{ Params: { id: string; member: string } }>(
      '/accounts/:id/members/:member',
      { config: { openapi: doc('removeEnterpriseMember', 'Remove a member', { 200: { description: ENTERPRISE } }) } },
      async (request) => {
        const result = check(await enterprises.removeMember(request.params.id, request.params.member));
        await settled(result.position);
        return enterpriseView(result.state);
      },
    );

    app.get<{ Params: { id: string } }>(
      '/accounts/:id/members',
      { config: { openapi: doc('listEnterpriseMembers', "An enterprise's members", { 200: { description: '`{data: [{account_id, role, since}]}`.' } }) } },
      async (request) => {
        await existingEnterprise(request.params.id);
        const members = await enterpriseMembers(sql, request.params.id);
        return { data: members.map((m) => ({ account_id: m.accountId, role: m.role, since: m.since })) };
      },
    );

    app.post<{ Params: { id: string } }>(
      '/accounts/:id/agents',
      { config: { openapi: doc('createAgent', 'Create an agent', { 201: { description: AGENT } }, { body: { json: CreateAgent } }) } },
      async (request, reply) => {
        const body = parse(CreateAgent, request.body);
        const enterprise = await existingEnterprise(request.params.id);
        const settings: AgentSettings = {
          name: body.name,
          system_prompt: body.system_prompt,
          model: body.model == null ? null : (registry.resolve(body.model)?.id ?? body.model),
          web_search: body.web_search ?? false,
          drawing: body.drawing ?? false,
          kb_ids: body.kb_ids ?? [],
          temperature: body.temperature ?? null,
          published: body.published ?? true,
        };
        await checkAgent(enterprise, body.creator_account_id, settings);
        const result = check(await enterprises.createAgent(request.params.id, body.creator_account_id, settings));
        await settled(result.position);
        return reply.code(201).send(agentView(result.state));
      },
    );

    app.get<{ Params: { id: string } }>(
      '/accounts/:id/agents',
      { config: { openapi: doc('listAgents', "An enterprise's agents (deleted ones too, with their status)", { 200: { description: `\`{data: [agent]}\`, each ${AGENT}` } }) } },
      async (request) => {
        await existingEnterprise(request.params.id);
        const agents = await enterpriseAgents(sql, request.params.id, null);
        return { data: await Promise.all(agents.map(async (a) => agentView(await enterprises.agent(a.agentId)))) };
      },
    );

    app.get<{ Params: { id: string } }>('/agents/:id', { config: { openapi: doc('getAgent', 'One agent', { 200: { description: AGENT } }) } }, async (request) => {
      const state = await enterprises.agent(request.params.id);
      if (state.status === 'none') throw new AdminError(404, 'agent_not_found', `agent ${request.params.id} not found`);
      return agentView(state);
    });

    app.patch<{ Params: { id: string } }>(
      '/agents/:id',
      { config: { openapi: doc('updateAgent', "Change an agent's settings", { 200: { description: AGENT } }, { body: { json: PatchAgent } }) } },
      async (request) => {
        const body = parse(PatchAgent, request.body);
        const agent = await existingAgent(request.params.id);
        const changes: Partial<AgentSettings> = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
        if (changes.model) changes.model = registry.resolve(changes.model)?.id ?? changes.model;
        await checkAgent(await enterprises.enterprise(agent.enterpriseId), agent.creatorAccountId, changes);
        const result = check(await enterprises.updateAgent(request.params.id, changes));
        await settled(result.position);
        return agentView(result.state);
      },
    );

    app.delete<{ Params: { id: string } }>(
      '/agents/:id',
      { config: { openapi: doc('deleteAgent', 'Delete an agent (its keys stop working at once: 403)', { 200: { description: '`{id, deleted: true}`.' } }) } },
      async (request) => {
        const result = check(await enterprises.deleteAgent(request.params.id));
        await settled(result.position);
        return { id: request.params.id, deleted: true };
      },
    );

    app.post<{ Params: { id: string } }>(
      '/agents/:id/keys',
      {
        config: {
          adminReplay: options.newKeyReplay,
          openapi: doc('issueAgentKey', 'An enterprise admin issues an agent key (the raw key is in the answer)', { 201: { description: 'The key, with `agent_id` and `key`: the raw key.' } }, { body: { json: IssueKey } }),
        },
      },
      async (request, reply) => {
        const body = parse(IssueKey, request.body);
        const result = check(await enterprises.issueAgentKey(request.params.id, body.name, body.issued_by, body.spend_cap_usd == null ? null : parseUsd(body.spend_cap_usd)));
        await settled(result.position);
        return reply.code(201).send({ ...(await options.keyView(result.keyId)), key: result.raw });
      },
    );

    app.get<{ Params: { id: string } }>(
      '/agents/:id/keys',
      { config: { openapi: doc('listAgentKeys', "An agent's keys", { 200: { description: '`{data: [key]}`.' } }) } },
      async (request) => {
        const keyIds = await agentKeyIds(sql, request.params.id);
        return { data: await Promise.all(keyIds.map((keyId) => options.keyView(keyId))) };
      },
    );

    app.post<{ Params: { id: string } }>(
      '/agents/:id/key-requests',
      { config: { openapi: doc('requestAgentKey', 'A member requests an agent key with a spend cap', { 201: { description: REQUEST } }, { body: { json: RequestKey } }) } },
      async (request, reply) => {
        const body = parse(RequestKey, request.body);
        const result = check(await enterprises.requestKey(request.params.id, body.name, body.requested_by, parseUsd(body.spend_cap_usd)));
        await settled(result.position);
        return reply.code(201).send(requestView(result.state));
      },
    );

    app.get<{ Params: { id: string }; Querystring: z.output<typeof RequestsQuery> }>(
      '/accounts/:id/key-requests',
      { config: { openapi: doc('listKeyRequests', "An enterprise's key requests, oldest first", { 200: { description: `\`{data: [request]}\`, each ${REQUEST}` } }, { query: RequestsQuery }) } },
      async (request) => {
        await existingEnterprise(request.params.id);
        const requests = await keyRequests(sql, request.params.id, request.query.status ?? 'all', null);
        return { data: await Promise.all(requests.map(async (r) => requestView(await enterprises.request(r.requestId)))) };
      },
    );

    app.post<{ Params: { id: string } }>(
      '/key-requests/:id/approve',
      {
        config: {
          adminReplay: options.newKeyReplay,
          openapi: doc(
            'approveKeyRequest',
            "An enterprise admin approves a key request: the cap moves from the enterprise's available balance into the key's escrow",
            { 201: { description: 'The key (with `key`, the raw key, `agent_id` and `request_id`).' } },
            { body: { json: Approve }, errors: { 402: "The enterprise's available balance cannot fund the cap: `insufficient_funds`." } },
          ),
        },
      },
      async (request, reply) => {
        const body = parse(Approve, request.body);
        const result = check(await enterprises.approve(request.params.id, body.approved_by));
        await settled(result.position);
        return reply.code(201).send({ ...(await options.keyView(result.keyId)), key: result.raw, request_id: request.params.id });
      },
    );

    app.post<{ Params: { id: string } }>(
      '/key-requests/:id/reject',
      { config: { openapi: doc('rejectKeyRequest', 'An enterprise admin rejects a key request', { 200: { description: REQUEST } }, { body: { json: Reject } }) } },
      async (request) => {
        const body = parse(Reject, request.body);
        const result = check(await enterprises.reject(request.params.id, body.rejected_by, body.reason ?? ''));
        await settled(result.position);
        return requestView(result.state);
      },
    );

    app.get<{ Params: { id: string }; Querystring: z.output<typeof AuditQuery> }>(
      '/accounts/:id/audit',
      {
        config: {
          openapi: doc('getAuditTrail', "An account's append-only audit trail, in the log's order", { 200: { description: '`{data: [{event_id, action, subject_type, subject_id, actor, details, at}], next_cursor}`.' } }, { query: AuditQuery }),
        },
      },
      async (request) => {
        const [commit, prepare, eventId] = request.query.after?.split('_') ?? [];
        const after = commit !== undefined && prepare !== undefined && eventId !== undefined ? { commit, prepare, eventId } : undefined;
        const { entries, more } = await auditPage(sql, request.params.id, after, request.query.limit);
        const last = entries[entries.length - 1]?.cursor;
        return {
          data: entries.map((e) => ({ event_id: e.eventId, action: e.action, subject_type: e.subjectType, subject_id: e.subjectId, actor: e.actor, details: e.details, at: e.at })),
          next_cursor: more && last ? `${last.commit}_${last.prepare}_${last.eventId}` : null,
        };
      },
    );
  };
}
