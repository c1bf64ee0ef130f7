import { createHash, randomUUID } from 'node:crypto';
import { agentStream, enterpriseStream, keyRequestStream, type AgentSettings, type EnterpriseEvent, type MemberRole } from '../../events/catalog';
import type { EventStore, Position } from '../../events/store/port';
import type { DomainError } from '../decision';
import { CommandHandler } from '../handle-command';
import type { KeyState } from '../key/decider';
import type { Ledger, Result } from '../ledger';
import { agentDecider, type AgentCommand, type AgentState } from './agent';
import { enterpriseDecider, isAdmin, isMember, type EnterpriseCommand, type EnterpriseState } from './enterprise';
import { keyRequestDecider, type KeyRequestCommand, type KeyRequestState } from './key-request';

const unixNow = () => Math.floor(Date.now() / 1000);
const fail = (code: string, message: string) => ({ ok: false as const, error: { code, message } satisfies DomainError });

/** The id of the key an approval issues: derived from its request, so a retried approval finds it. */
export const approvedKeyId = (requestId: string) => `key_${createHash('sha256').update(`keyreq:${requestId}`).digest('hex').slice(0, 24)}`;

/**
 * Enterprises, their members, agents and agent keys: the application side of the enterprise, agent
 * and key-request deciders. Money (escrow) and keys go through the Ledger, so an agent key is a key
 * like any other (same format, vault, revocation) bound to its agent.
 */
export class Enterprises {
  readonly enterprises: CommandHandler<EnterpriseCommand, EnterpriseState, EnterpriseEvent>;
  readonly agents: CommandHandler<AgentCommand, AgentState, EnterpriseEvent>;
  readonly requests: CommandHandler<KeyRequestCommand, KeyRequestState, EnterpriseEvent>;

  constructor(
    store: EventStore,
    private readonly ledger: Ledger,
    private readonly now: () => number = unixNow,
  ) {
    this.enterprises = new CommandHandler(store, enterpriseDecider);
    this.agents = new CommandHandler(store, agentDecider);
    this.requests = new CommandHandler(store, keyRequestDecider);
  }

  async enterprise(accountId: string): Promise<EnterpriseState> {
    return (await this.enterprises.load(enterpriseStream(accountId))).state;
  }

  /** The enterprise as an agent call needs it: cached, at most a second behind the log. */
  async recentEnterprise(accountId: string): Promise<EnterpriseState> {
    return (await this.enterprises.recent(enterpriseStream(accountId), 1000)).state;
  }

  async agent(agentId: string): Promise<AgentState> {
    return (await this.agents.load(agentStream(agentId))).state;
  }

  /** The agent as a call needs it: cached, at most a second behind the log (a deletion or an
   * unpublish made through another instance applies here within that). */
  async recentAgent(agentId: string): Promise<AgentState> {
    return (await this.agents.recent(agentStream(agentId), 1000)).state;
  }

  async request(requestId: string): Promise<KeyRequestState> {
    return (await this.requests.load(keyRequestStream(requestId))).state;
  }

  async configure(accountId: string, allowedModels: readonly string[] | null, defaultModel: string | null, actor = 'admin') {
    const wallet = await this.ledger.wallet(accountId);
    if (wallet.status === 'none') return fail('account_not_found', `account ${accountId} not found`);
    const handled = await this.enterprises.handle(
      enterpriseStream(accountId),
      { type: 'Configure', accountId, allowedModels, defaultModel, now: this.now() },
      { metadata: { actor } },
    );
    return handled.ok ? { ok: true as const, position: handled.position, state: handled.state } : fail(handled.error.code, handled.error.message);
  }

  async setMember(accountId: string, memberAccountId: string, role: MemberRole, actor = 'admin') {
    if ((await this.ledger.wallet(memberAccountId)).status === 'none') return fail('account_not_found', `member account ${memberAccountId} not found`);
    const handled = await this.enterprises.handle(enterpriseStream(accountId), { type: 'SetMember', memberAccountId, role, now: this.now() }, { metadata: { actor } });
    return handled.ok ? { ok: true as const, position: handled.position, state: handled.state } : fail(handled.error.code, handled.error.message);
  }

  async removeMember(accountId: string, memberAccountId: string, actor = 'admin') {
    const handled = await this.enterprises.handle(enterpriseStream(accountId), { type: 'RemoveMember', memberAccountId, now: this.now() }, { metadata: { actor } });
    return handled.ok ? { ok: true as const, position: handled.position, state: handled.state } : fail(handled.error.code, handled.error.message);
  }

  /** The creator must be a member; the caller has checked the model and the knowledge bases. */
  async createAgent(enterpriseId: string, creatorAccountId: string, settings: AgentSettings, actor = 'admin') {
    const enterprise = await this.enterprise(enterpriseId);
    if (!enterprise.exists) return fail('enterprise_not_found', `account ${enterpriseId} is not an enterprise`);
    if (!isMember(enterprise, creatorAccountId)) return fail('not_a_member', `${creatorAccountId} is not a member of enterprise ${enterpriseId}`);
    const agentId = `agt_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
    const handled = await this.agents.handle(
      agentStream(agentId),
      { type: 'CreateAgent', agentId, enterpriseId, creatorAccountId, settings, now: this.now() },
      { metadata: { actor } },
    );
    return handled.ok ? { ok: true as const, position: handled.position, state: handled.state } : fail(handled.error.code, handled.error.message);
  }

  async updateAgent(agentId: string, changes: Partial<AgentSettings>, actor = 'admin') {
    const handled = await this.agents.handle(agentStream(agentId), { type: 'UpdateAgent', changes, now: this.now() }, { metadata: { actor } });
    return handled.ok ? { ok: true as const, position: handled.position, state: handled.state } : fail(handled.error.code, handled.error.message);
  }

  async deleteAgent(agentId: string, actor = 'admin') {
    const handled = await this.agents.handle(agentStream(agentId), { type: 'DeleteAgent', now: this.now() }, { metadata: { actor } });
    return handled.ok ? { ok: true as const, position: handled.position, state: handled.state } : fail(handled.error.code, handled.error.message);
  }

  private async activeAgent(agentId: string): Promise<{ agent: AgentState; enterprise: EnterpriseState } | { ok: false; error: DomainError }> {
    const agent = await this.agent(agentId);
    if (agent.status !== 'active') return fail('agent_not_found', `agent ${agentId} not found`);
    return { agent, enterprise: await this.enterprise(agent.enterpriseId) };
  }

  /** An enterprise admin issues a key directly; with a spend cap it is an ordinary cap on the
   * enterprise wallet (no escrow), without one the key draws on the wallet like any key. */
  async issueAgentKey(agentId: string, name: string, issuedBy: string, spendCap: bigint | null): Promise<Result<{ keyId: string; raw: string; state: KeyState }>> {
    const found = await this.activeAgent(agentId);
    if ('ok' in found) return found;
    if (!isAdmin(found.enterprise, issuedBy)) return fail('not_enterprise_admin', `${issuedBy} is not an admin of enterprise ${found.agent.enterpriseId}`);
    return this.ledger.issueKey(
      found.agent.enterpriseId,
      { name, allowed_models: null, expires_at: null, enabled: true, spend_cap: spendCap },
      issuedBy,
      { agent: { agentId, issuedBy, requestId: null } },
    );
  }

  async requestKey(agentId: string, name: string, requestedBy: string, spendCap: bigint) {
    const found = await this.activeAgent(agentId);
    if ('ok' in found) return found;
    if (!isMember(found.enterprise, requestedBy)) return fail('not_a_member', `${requestedBy} is not a member of enterprise ${found.agent.enterpriseId}`);
    const requestId = `kreq_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
    const handled = await this.requests.handle(
      keyRequestStream(requestId),
      { type: 'RequestKey', requestId, agentId, enterpriseId: found.agent.enterpriseId, name, requestedBy, spendCap, now: this.now() },
      { metadata: { actor: requestedBy } },
    );
    return handled.ok ? { ok: true as const, position: handled.position, state: handled.state } : fail(handled.error.code, handled.error.message);
  }

  /**
   * Approval, in the order that a crash or a retry cannot turn into lost money: the escrow is set
   * aside first (refused with insufficient_funds, nothing else done), then the key is issued under
   * an id derived from the request, then the request is marked approved. A retry finds the escrow
   * and the key already there and finishes; the raw key is then revealed from the vault.
   */
  async approve(requestId: string, approvedBy: string): Promise<Result<{ keyId: string; raw: string; state: KeyState; request: KeyRequestState }>> {
    const request = await this.request(requestId);
    if (request.status === 'none') return fail('key_request_not_found', `key request ${requestId} not found`);
    if (request.status !== 'pending') return fail('key_request_decided', `the key request is already ${request.status}`);
    const enterprise = await this.enterprise(request.enterpriseId);
    if (!isAdmin(enterprise, approvedBy)) return fail('not_enterprise_admin', `${approvedBy} is not an admin of enterprise ${request.enterpriseId}`);
    const agent = await this.agent(request.agentId);
    if (agent.status !== 'active') return fail('agent_not_found', `agent ${request.agentId} was deleted`);
    const keyId = approvedKeyId(requestId);
    const funded = await this.ledger.fundEscrow(request.enterpriseId, keyId, request.spendCap, requestId, approvedBy);
    if (!funded.ok) return funded;
    let issued: Result<{ keyId: string; raw: string; state: KeyState }> = await this.ledger.issueKey(
      request.enterpriseId,
      { name: request.name, allowed_models: null, expires_at: null, enabled: true, spend_cap: request.spendCap },
      approvedBy,
      { agent: { agentId: request.agentId, issuedBy: approvedBy, requestId }, keyId },
    );
    if (!issued.ok && issued.error.code === 'key_exists') {
      const revealed = await this.ledger.revealKey(keyId, approvedBy);
      issued = revealed.ok ? { ok: true, position: revealed.position, keyId, raw: revealed.raw, state: revealed.state } : revealed;
    }
    if (!issued.ok) return issued;
    const approved = await this.requests.handle(keyRequestStream(requestId), { type: 'ApproveRequest', approvedBy, keyId, now: this.now() }, { metadata: { actor: approvedBy } });
    if (!approved.ok) return fail(approved.error.code, approved.error.message);
    return { ok: true, position: latest(approved.position, issued.position), keyId, raw: issued.raw, state: issued.state, request: approved.state };
  }

  async reject(requestId: string, rejectedBy: string, reason: string) {
    const request = await this.request(requestId);
    if (request.status === 'none') return fail('key_request_not_found', `key request ${requestId} not found`);
    const enterprise = await this.enterprise(request.enterpriseId);
    if (!isAdmin(enterprise, rejectedBy)) return fail('not_enterprise_admin', `${rejectedBy} is not an admin of enterprise ${request.enterpriseId}`);
    const handled = await this.requests.handle(keyRequestStream(requestId), { type: 'RejectRequest', rejectedBy, reason, now: this.now() }, { metadata: { actor: rejectedBy } });
    if (!handled.ok) return fail(handled.error.code, handled.error.message);
    // An approval that funded the escrow and then failed (before its key or its record) leaves the
    // escrow set aside: a rejection gives it back.
    const key = await this.ledger.key(approvedKeyId(requestId));
    if (key.status === 'none') {
      const returned = await this.ledger.returnEscrow(request.enterpriseId, approvedKeyId(requestId), rejectedBy);
      if (!returned.ok && returned.error.code !== 'escrow_not_found') return fail(returned.error.code, returned.error.message);
    }
    return { ok: true as const, position: handled.position, state: handled.state };
  }

  async idle(): Promise<void> {
    await Promise.all([this.enterprises.idle(), this.agents.idle(), this.requests.idle()]);
  }
}

/** The position to wait for: the approval's, appended last (or the key's, when the approval was there already). */
function latest(approval: Position | null, key: Position | null): Position | null {
  return approval ?? key;
}
