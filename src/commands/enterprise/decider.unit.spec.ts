import { describe, expect, it } from 'vitest';
import { givenWhenThen } from '../../../test/support/decider';
import type { EnterpriseEvent } from '../../events/catalog';
import { agentDecider } from './agent';
import { allowsModel, enterpriseDecider, isAdmin, isMember } from './enterprise';
import { keyRequestDecider } from './key-request';

const NOW = 1_700_000_000;

describe('enterprise decider', () => {
  const { given } = givenWhenThen(enterpriseDecider);
  const configured: EnterpriseEvent = { type: 'EnterpriseConfigured', data: { account_id: 'ent', allowed_models: ['a', 'b'], default_model: 'a', at: NOW } };

  it('configures an enterprise; the same settings again append nothing', () => {
    given().when({ type: 'Configure', accountId: 'ent', allowedModels: ['a', 'b'], defaultModel: 'a', now: NOW }).then([configured]);
    given([configured]).when({ type: 'Configure', accountId: 'ent', allowedModels: ['a', 'b'], defaultModel: 'a', now: NOW }).then([]);
  });

  it('refuses a default model off its own allow-list', () => {
    given().when({ type: 'Configure', accountId: 'ent', allowedModels: ['a'], defaultModel: 'b', now: NOW }).thenRefused('invalid_enterprise');
  });

  it('sets, changes and removes members; members need an enterprise', () => {
    given().when({ type: 'SetMember', memberAccountId: 'm', role: 'admin', now: NOW }).thenRefused('enterprise_not_found');
    const state = given([configured]).when({ type: 'SetMember', memberAccountId: 'm', role: 'admin', now: NOW }).then([
      { type: 'MemberSet', data: { member_account_id: 'm', role: 'admin', at: NOW } },
    ]);
    expect(isAdmin(state, 'm')).toBe(true);
    const set: EnterpriseEvent = { type: 'MemberSet', data: { member_account_id: 'm', role: 'member', at: NOW } };
    const after = given([configured, set]).state;
    expect([isAdmin(after, 'm'), isMember(after, 'm')]).toEqual([false, true]);
    given([configured, set]).when({ type: 'RemoveMember', memberAccountId: 'm', now: NOW }).then([{ type: 'MemberRemoved', data: { member_account_id: 'm', at: NOW } }]);
    given([configured]).when({ type: 'RemoveMember', memberAccountId: 'x', now: NOW }).thenRefused('member_not_found');
  });

  it('the allow-list: null allows every model', () => {
    expect(allowsModel(given([configured]).state, 'c')).toBe(false);
    expect(allowsModel(given([{ ...configured, data: { ...configured.data, allowed_models: null } } as EnterpriseEvent]).state, 'c')).toBe(true);
  });
});

describe('agent decider', () => {
  const { given } = givenWhenThen(agentDecider);
  const settings = { name: 'A', system_prompt: 'p', model: null, web_search: false, drawing: false, kb_ids: [], temperature: 0.5, published: true };
  const created: EnterpriseEvent = { type: 'AgentCreated', data: { agent_id: 'g', enterprise_id: 'ent', creator_account_id: 'c', ...settings, at: NOW } };

  it('creates once, updates only what changes, deletes', () => {
    given().when({ type: 'CreateAgent', agentId: 'g', enterpriseId: 'ent', creatorAccountId: 'c', settings, now: NOW }).then([created]);
    given([created]).when({ type: 'CreateAgent', agentId: 'g', enterpriseId: 'ent', creatorAccountId: 'c', settings, now: NOW }).thenRefused('agent_exists');
    given([created]).when({ type: 'UpdateAgent', changes: { temperature: 0.5, published: false }, now: NOW }).then([
      { type: 'AgentUpdated', data: { changes: { published: false }, at: NOW } },
    ]);
    given([created]).when({ type: 'UpdateAgent', changes: { temperature: 3 }, now: NOW }).thenRefused('invalid_agent');
    const deleted = given([created]).when({ type: 'DeleteAgent', now: NOW }).then([{ type: 'AgentDeleted', data: { at: NOW } }]);
    expect(deleted.status).toBe('deleted');
    given([created, { type: 'AgentDeleted', data: { at: NOW } }]).when({ type: 'UpdateAgent', changes: { name: 'B' }, now: NOW }).thenRefused('agent_not_found');
  });
});

describe('key request decider', () => {
  const { given } = givenWhenThen(keyRequestDecider);
  const requested: EnterpriseEvent = {
    type: 'KeyRequested',
    data: { request_id: 'r', agent_id: 'g', enterprise_id: 'ent', name: 'k', requested_by: 'm', spend_cap: 5n, at: NOW },
  };
  const request = { type: 'RequestKey' as const, requestId: 'r', agentId: 'g', enterpriseId: 'ent', name: 'k', requestedBy: 'm', spendCap: 5n, now: NOW };

  it('a request must carry a spend cap above 0', () => {
    given().when(request).then([requested]);
    given().when({ ...request, spendCap: 0n }).thenRefused('invalid_key_request');
  });

  it('pending goes to approved or rejected once; the same approval again is no new decision', () => {
    const approved: EnterpriseEvent = { type: 'KeyRequestApproved', data: { approved_by: 'a', key_id: 'key_1', at: NOW } };
    given([requested]).when({ type: 'ApproveRequest', approvedBy: 'a', keyId: 'key_1', now: NOW }).then([approved]);
    given([requested, approved]).when({ type: 'ApproveRequest', approvedBy: 'a', keyId: 'key_1', now: NOW }).then([]);
    given([requested, approved]).when({ type: 'RejectRequest', rejectedBy: 'a', reason: '', now: NOW }).thenRefused('key_request_decided');
    const rejected: EnterpriseEvent = { type: 'KeyRequestRejected', data: { rejected_by: 'a', reason: 'no', at: NOW } };
    given([requested]).when({ type: 'RejectRequest', rejectedBy: 'a', reason: 'no', now: NOW }).then([rejected]);
    given([requested, rejected]).when({ type: 'ApproveRequest', approvedBy: 'a', keyId: 'key_1', now: NOW }).thenRefused('key_request_decided');
  });
});
