import type { EnterpriseEvent } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

/** An employee's request for an agent key (stream `keyreq-{requestId}`): pending, then approved
 * (naming the key issued) or rejected, once. */
export interface KeyRequestState {
  readonly status: 'none' | 'pending' | 'approved' | 'rejected';
  readonly requestId: string;
  readonly agentId: string;
  readonly enterpriseId: string;
  readonly name: string;
  readonly requestedBy: string;
  readonly spendCap: bigint;
  readonly keyId: string | null;
  readonly decidedBy: string | null;
  readonly createdAt: number;
}

export const initialKeyRequestState: KeyRequestState = {
  status: 'none',
  requestId: '',
  agentId: '',
  enterpriseId: '',
  name: '',
  requestedBy: '',
  spendCap: 0n,
  keyId: null,
  decidedBy: null,
  createdAt: 0,
};

export type KeyRequestCommand =
  | { type: 'RequestKey'; requestId: string; agentId: string; enterpriseId: string; name: string; requestedBy: string; spendCap: bigint; now: number }
  | { type: 'ApproveRequest'; approvedBy: string; keyId: string; now: number }
  | { type: 'RejectRequest'; rejectedBy: string; reason: string; now: number };

export type KeyRequestErrorCode = 'key_request_not_found' | 'key_request_exists' | 'key_request_decided' | 'invalid_key_request';

export function evolve(state: KeyRequestState, event: EnterpriseEvent): KeyRequestState {
  switch (event.type) {
    case 'KeyRequested': {
      const d = event.data;
      return {
        ...state,
        status: 'pending',
        requestId: d.request_id,
        agentId: d.agent_id,
        enterpriseId: d.enterprise_id,
        name: d.name,
        requestedBy: d.requested_by,
        spendCap: d.spend_cap,
        createdAt: d.at,
      };
    }
    case 'KeyRequestApproved':
      return { ...state, status: 'approved', keyId: event.data.key_id, decidedBy: event.data.approved_by };
    case 'KeyRequestRejected':
      return { ...state, status: 'rejected', decidedBy: event.data.rejected_by };
    default:
      return state;
  }
}

export function decide(command: KeyRequestCommand, state: KeyRequestState): Decision<EnterpriseEvent, KeyRequestErrorCode> {
  if (command.type === 'RequestKey') {
    if (state.status !== 'none') return refuse('key_request_exists', `key request ${command.requestId} already exists`);
    if (command.spendCap <= 0n) return refuse('invalid_key_request', 'an employee-requested key must carry a spend cap above 0');
    if (command.name.trim() === '') return refuse('invalid_key_request', 'name must not be empty');
    return accept({
      type: 'KeyRequested',
      data: {
        request_id: command.requestId,
        agent_id: command.agentId,
        enterprise_id: command.enterpriseId,
        name: command.name,
        requested_by: command.requestedBy,
        spend_cap: command.spendCap,
        at: command.now,
      },
    });
  }
  if (state.status === 'none') return refuse('key_request_not_found', 'key request not found');
  switch (command.type) {
    case 'ApproveRequest':
      // The same approval again (a retry naming the same key) is no new decision.
      if (state.status === 'approved' && state.keyId === command.keyId) return accept();
      if (state.status !== 'pending') return refuse('key_request_decided', `the key request is already ${state.status}`);
      return accept({ type: 'KeyRequestApproved', data: { approved_by: command.approvedBy, key_id: command.keyId, at: command.now } });
    case 'RejectRequest':
      if (state.status !== 'pending') return refuse('key_request_decided', `the key request is already ${state.status}`);
      return accept({ type: 'KeyRequestRejected', data: { rejected_by: command.rejectedBy, reason: command.reason, at: command.now } });
    default:
      return assertNever(command);
  }
}

export const keyRequestDecider: Decider<KeyRequestCommand, KeyRequestState, EnterpriseEvent, KeyRequestErrorCode> = {
  initialState: initialKeyRequestState,
  evolve,
  decide,
};
