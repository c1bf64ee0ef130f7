import type { AgentSettings, EnterpriseEvent } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

/** One enterprise agent (stream `agent-{agentId}`): persona, locked model, switches, knowledge. */
export interface AgentState {
  readonly status: 'none' | 'active' | 'deleted';
  readonly agentId: string;
  readonly enterpriseId: string;
  readonly creatorAccountId: string;
  readonly settings: AgentSettings;
  readonly createdAt: number;
}

export const initialAgentState: AgentState = {
  status: 'none',
  agentId: '',
  enterpriseId: '',
  creatorAccountId: '',
  settings: { name: '', system_prompt: '', model: null, web_search: false, drawing: false, kb_ids: [], temperature: null, published: false },
  createdAt: 0,
};

export type AgentCommand =
  | { type: 'CreateAgent'; agentId: string; enterpriseId: string; creatorAccountId: string; settings: AgentSettings; now: number }
  | { type: 'UpdateAgent'; changes: Partial<AgentSettings>; now: number }
  | { type: 'DeleteAgent'; now: number };

export type AgentErrorCode = 'agent_not_found' | 'agent_exists' | 'invalid_agent';

function problem(settings: Partial<AgentSettings>): string | null {
  if (settings.name !== undefined && settings.name.trim() === '') return 'name must not be empty';
  if (settings.temperature !== undefined && settings.temperature !== null && !(settings.temperature >= 0 && settings.temperature <= 2))
    return 'temperature must be between 0 and 2';
  return null;
}

export function evolve(state: AgentState, event: EnterpriseEvent): AgentState {
  switch (event.type) {
    case 'AgentCreated': {
      const { agent_id, enterprise_id, creator_account_id, at, ...settings } = event.data;
      return { status: 'active', agentId: agent_id, enterpriseId: enterprise_id, creatorAccountId: creator_account_id, settings, createdAt: at };
    }
    case 'AgentUpdated': {
      const changes = Object.fromEntries(Object.entries(event.data.changes).filter(([, v]) => v !== undefined));
      return { ...state, settings: { ...state.settings, ...changes } };
    }
    case 'AgentDeleted':
      return { ...state, status: 'deleted' };
    default:
      return state;
  }
}

export function decide(command: AgentCommand, state: AgentState): Decision<EnterpriseEvent, AgentErrorCode> {
  if (command.type === 'CreateAgent') {
    if (state.status !== 'none') return refuse('agent_exists', `agent ${command.agentId} already exists`);
    const bad = problem(command.settings);
    if (bad) return refuse('invalid_agent', bad);
    return accept({
      type: 'AgentCreated',
      data: { agent_id: command.agentId, enterprise_id: command.enterpriseId, creator_account_id: command.creatorAccountId, ...command.settings, at: command.now },
    });
  }
  if (state.status !== 'active') return refuse('agent_not_found', 'agent not found');
  switch (command.type) {
    case 'UpdateAgent': {
      const bad = problem(command.changes);
      if (bad) return refuse('invalid_agent', bad);
      const changes = Object.fromEntries(
        Object.entries(command.changes).filter(
          ([field, value]) => value !== undefined && JSON.stringify(value) !== JSON.stringify(state.settings[field as keyof AgentSettings]),
        ),
      ) as Partial<AgentSettings>;
      if (Object.keys(changes).length === 0) return accept();
      return accept({ type: 'AgentUpdated', data: { changes, at: command.now } });
    }
    case 'DeleteAgent':
      return accept({ type: 'AgentDeleted', data: { at: command.now } });
    default:
      return assertNever(command);
  }
}

export const agentDecider: Decider<AgentCommand, AgentState, EnterpriseEvent, AgentErrorCode> = {
  initialState: initialAgentState,
  evolve,
  decide,
};
