import { Map as PersistentMap } from 'immutable';
import type { EnterpriseEvent, MemberRole } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

/** An enterprise: its model allow-list, default model and members (stream `enterprise-{accountId}`). */
export interface EnterpriseState {
  readonly exists: boolean;
  readonly accountId: string;
  readonly allowedModels: readonly string[] | null;
  readonly defaultModel: string | null;
  readonly members: PersistentMap<string, MemberRole>;
}

export const initialEnterpriseState: EnterpriseState = {
  exists: false,
  accountId: '',
  allowedModels: null,
  defaultModel: null,
  members: PersistentMap<string, MemberRole>(),
};

export type EnterpriseCommand =
  | { type: 'Configure'; accountId: string; allowedModels: readonly string[] | null; defaultModel: string | null; now: number }
  | { type: 'SetMember'; memberAccountId: string; role: MemberRole; now: number }
  | { type: 'RemoveMember'; memberAccountId: string; now: number };

export type EnterpriseErrorCode = 'enterprise_not_found' | 'member_not_found' | 'invalid_enterprise';

export const isAdmin = (state: EnterpriseState, accountId: string) => state.exists && state.members.get(accountId) === 'admin';
export const isMember = (state: EnterpriseState, accountId: string) => state.exists && state.members.has(accountId);

/** Whether the enterprise's allow-list lets its agents use `model` (null: every model). */
export const allowsModel = (state: EnterpriseState, model: string) => state.allowedModels === null || state.allowedModels.includes(model);

export function evolve(state: EnterpriseState, event: EnterpriseEvent): EnterpriseState {
  switch (event.type) {
    case 'EnterpriseConfigured':
      return { ...state, exists: true, accountId: event.data.account_id, allowedModels: event.data.allowed_models, defaultModel: event.data.default_model };
    case 'MemberSet':
      return { ...state, members: state.members.set(event.data.member_account_id, event.data.role) };
    case 'MemberRemoved':
      return { ...state, members: state.members.delete(event.data.member_account_id) };
    default:
      return state;
  }
}

export function decide(command: EnterpriseCommand, state: EnterpriseState): Decision<EnterpriseEvent, EnterpriseErrorCode> {
  switch (command.type) {
    case 'Configure': {
      if (command.defaultModel !== null && command.allowedModels !== null && !command.allowedModels.includes(command.defaultModel))
        return refuse('invalid_enterprise', `the default model ${command.defaultModel} is not on the enterprise's allow-list`);
      const same =
        state.exists &&
        state.defaultModel === command.defaultModel &&
        JSON.stringify(state.allowedModels) === JSON.stringify(command.allowedModels);
      if (same) return accept();
      return accept({
        type: 'EnterpriseConfigured',
        data: { account_id: command.accountId, allowed_models: command.allowedModels === null ? null : [...command.allowedModels], default_model: command.defaultModel, at: command.now },
      });
    }
    case 'SetMember':
      if (!state.exists) return refuse('enterprise_not_found', 'the account is not an enterprise');
      if (state.members.get(command.memberAccountId) === command.role) return accept();
      return accept({ type: 'MemberSet', data: { member_account_id: command.memberAccountId, role: command.role, at: command.now } });
    case 'RemoveMember':
      if (!state.exists) return refuse('enterprise_not_found', 'the account is not an enterprise');
      if (!state.members.has(command.memberAccountId)) return refuse('member_not_found', `${command.memberAccountId} is not a member`);
      return accept({ type: 'MemberRemoved', data: { member_account_id: command.memberAccountId, at: command.now } });
    default:
      return assertNever(command);
  }
}

export const enterpriseDecider: Decider<EnterpriseCommand, EnterpriseState, EnterpriseEvent, EnterpriseErrorCode> = {
  initialState: initialEnterpriseState,
  evolve,
  decide,
};
