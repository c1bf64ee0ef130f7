import { describe, expect, it } from 'vitest';
import { agentStream, enterpriseStream, keyRequestStream } from '../../src/events/catalog';
import { enterprisesProjection } from '../../src/projections/enterprises/projection';
import { enterpriseAgents, enterpriseMembers, enterprisesAdministered, keyRequests } from '../../src/projections/enterprises/queries';
import { projectionSpec, type GivenEvent } from './support';

const spec = projectionSpec([enterprisesProjection]);
const USD = 1_000_000_000n;

const member = (enterpriseId: string, accountId: string, role: 'admin' | 'member', at: number): GivenEvent => ({
  stream: enterpriseStream(enterpriseId),
  type: 'MemberSet',
  data: { member_account_id: accountId, role, at },
});
const agent = (agentId: string, enterpriseId: string, name: string, at: number): GivenEvent => ({
  stream: agentStream(agentId),
  type: 'AgentCreated',
  data: { agent_id: agentId, enterprise_id: enterpriseId, creator_account_id: 'acct_u', name, system_prompt: '', model: null, web_search: false, drawing: false, kb_ids: [], temperature: null, published: true, at },
});
const requested = (requestId: string, enterpriseId: string, at: number): GivenEvent => ({
  stream: keyRequestStream(requestId),
  type: 'KeyRequested',
  data: { request_id: requestId, agent_id: 'agent_1', enterprise_id: enterpriseId, name: `key of ${requestId}`, requested_by: 'acct_u', spend_cap: 2n * USD, at },
});

describe('enterprises/queries.ts', () => {
  it("enterpriseMembers and enterprisesAdministered: an enterprise's members longest-standing first; the enterprises an account administers", async () => {
    // Times of the gateway's clock (ten digits): the members' list orders by `since` as text.
    const T = 1_700_000_000;
    await spec.given([
      member('acct_e1', 'acct_u', 'member', T + 10),
      member('acct_e1', 'acct_w', 'admin', T + 10),
      member('acct_e1', 'acct_v', 'admin', T + 9),
      member('acct_e1', 'acct_gone', 'member', T + 8),
      { stream: enterpriseStream('acct_e1'), type: 'MemberRemoved', data: { member_account_id: 'acct_gone', at: T + 11 } },
      // A role changed keeps its member's standing.
      member('acct_e1', 'acct_u', 'admin', T + 12),
      member('acct_e2', 'acct_u', 'admin', T),
      member('acct_e3', 'acct_u', 'member', T - 10),
    ]);
    expect(await enterpriseMembers(spec.sql, 'acct_e1')).toEqual([
      { accountId: 'acct_v', role: 'admin', since: T + 9 },
      { accountId: 'acct_u', role: 'admin', since: T + 10 },
      { accountId: 'acct_w', role: 'admin', since: T + 10 },
    ]);
    expect(await enterprisesAdministered(spec.sql, 'acct_u')).toEqual(['acct_e2', 'acct_e1']);
    expect(await enterprisesAdministered(spec.sql, 'acct_gone')).toEqual([]);
    await spec.replayGivesSameRows();
  });

  it("enterpriseAgents: an enterprise's agents in the log's order of their creation (not their clocks), changed settings and deleted ones included, at most `limit`", async () => {
    await spec.given([
      agent('agent_z', 'acct_e', 'Zed', 1000),
      agent('agent_a', 'acct_e', 'Ada', 999),
      agent('agent_other', 'acct_f', 'Theirs', 998),
      { stream: agentStream('agent_z'), type: 'AgentUpdated', data: { changes: { name: 'Zed 2', model: 'chat-model', kb_ids: ['default'], published: false }, at: 1001 } },
      { stream: agentStream('agent_a'), type: 'AgentDeleted', data: { at: 1002 } },
    ]);
    expect(await enterpriseAgents(spec.sql, 'acct_e', null)).toEqual([
      { agentId: 'agent_z', name: 'Zed 2', model: 'chat-model', published: false, kbIds: ['default'], deleted: false },
      { agentId: 'agent_a', name: 'Ada', model: null, published: true, kbIds: [], deleted: true },
    ]);
    expect((await enterpriseAgents(spec.sql, 'acct_e', 1)).map((a) => a.agentId)).toEqual(['agent_z']);
    await spec.replayGivesSameRows();
  });

  it("keyRequests: an enterprise's key requests of a status (or all) in the log's order, at most `limit`", async () => {
    await spec.given([
      requested('req_1', 'acct_e', 1000),
      requested('req_2', 'acct_e', 999),
      requested('req_3', 'acct_e', 1001),
      requested('req_4', 'acct_e', 1002),
      requested('req_other', 'acct_f', 998),
      { stream: keyRequestStream('req_2'), type: 'KeyRequestApproved', data: { approved_by: 'acct_w', key_id: 'key_9', at: 1003 } },
      { stream: keyRequestStream('req_3'), type: 'KeyRequestRejected', data: { rejected_by: 'acct_w', reason: 'no', at: 1004 } },
    ]);
    expect(await keyRequests(spec.sql, 'acct_e', 'pending', null)).toEqual([
      { requestId: 'req_1', agentId: 'agent_1', name: 'key of req_1', requestedBy: 'acct_u', spendCap: 2n * USD, createdAt: 1000 },
      { requestId: 'req_4', agentId: 'agent_1', name: 'key of req_4', requestedBy: 'acct_u', spendCap: 2n * USD, createdAt: 1002 },
    ]);
    const ids = async (status: Parameters<typeof keyRequests>[2], limit: number | null) => (await keyRequests(spec.sql, 'acct_e', status, limit)).map((r) => r.requestId);
    expect(await ids('all', null)).toEqual(['req_1', 'req_2', 'req_3', 'req_4']);
    expect(await ids('approved', null)).toEqual(['req_2']);
    expect(await ids('rejected', null)).toEqual(['req_3']);
    expect(await ids('pending', 1)).toEqual(['req_1']);
    await spec.replayGivesSameRows();
  });
});
