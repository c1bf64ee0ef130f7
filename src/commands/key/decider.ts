import type { KeyEvent, KeySettings } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

export interface KeyState {
  readonly status: 'none' | 'active' | 'revoked' | 'deleted';
  readonly keyId: string;
  readonly accountId: string;
  readonly prefix: string;
  readonly hash: string;
  readonly revealable: boolean;
  readonly settings: KeySettings;
  readonly createdAt: number;
  /** An agent key: bound to this one enterprise agent (null: an ordinary key). */
  readonly agentId: string | null;
  /** The key request an escrow key came from. */
  readonly requestId: string | null;
}

export const initialKeyState: KeyState = {
  status: 'none',
  keyId: '',
  accountId: '',
  prefix: '',
  hash: '',
  revealable: false,
  settings: { name: '', allowed_models: null, expires_at: null, enabled: true, spend_cap: null, group: null },
  createdAt: 0,
  agentId: null,
  requestId: null,
};

export type KeyCommand =
  | {
      type: 'IssueKey';
      keyId: string;
      accountId: string;
      prefix: string;
      hash: string;
      revealable: boolean;
      settings: KeySettings;
      /** An agent key: its agent, who issued (or approved) it, and the request it came from. */
      agent?: { agentId: string; issuedBy: string; requestId: string | null };
      now: number;
    }
  | { type: 'UpdateKey'; changes: Partial<KeySettings>; now: number }
  | { type: 'RevealKey'; actor: string; now: number }
  | { type: 'RevokeKey'; reason: string; now: number }
  | { type: 'DeleteKey'; now: number };

export type KeyErrorCode = 'key_not_found' | 'key_exists' | 'key_revoked' | 'key_not_revealable' | 'invalid_settings';

/** Why a presented key cannot be used now; the HTTP edge turns each into its own 401 message. */
export type KeyRefusal = 'revoked' | 'expired' | null;

export function usability(state: KeyState, now: number): KeyRefusal {
  if (state.status !== 'active' || !state.settings.enabled) return 'revoked';
  if (state.settings.expires_at !== null && state.settings.expires_at <= now) return 'expired';
  return null;
}

function validate(settings: Partial<KeySettings>): string | null {
  if (settings.name !== undefined && settings.name.trim() === '') return 'name must not be empty';
  if (settings.spend_cap !== undefined && settings.spend_cap !== null && settings.spend_cap < 0n) return 'spend cap must not be negative';
  return null;
}

export function evolve(state: KeyState, event: KeyEvent): KeyState {
  switch (event.type) {
    case 'KeyIssued': {
      const { key_id, account_id, prefix, hash, revealable, at, name, allowed_models, expires_at, enabled, spend_cap } = event.data;
      return {
        status: 'active',
        keyId: key_id,
        accountId: account_id,
        prefix,
        hash,
        revealable,
        // Keys issued before groups have none.
        settings: { name, allowed_models, expires_at, enabled, spend_cap, group: event.data.group ?? null },
        createdAt: at,
        agentId: event.data.agent_id ?? null,
        requestId: event.data.request_id ?? null,
      };
    }
    case 'KeyUpdated':
      return { ...state, settings: { ...state.settings, ...stripUndefined(event.data.changes) } };
    case 'KeyRevealed':
      return state;
    case 'KeyRevoked':
      return { ...state, status: 'revoked' };
    case 'KeyDeleted':
      return { ...state, status: 'deleted', revealable: false };
    default:
      return state;
  }
}

function withoutNullGroup(settings: KeySettings): KeySettings {
  const { group, ...rest } = settings;
  return group == null ? rest : { ...rest, group };
}

const bigintAsString = (_key: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function decide(command: KeyCommand, state: KeyState): Decision<KeyEvent, KeyErrorCode> {
  if (command.type === 'IssueKey') {
    if (state.status !== 'none') return refuse('key_exists', `key ${command.keyId} already exists`);
    const problem = validate(command.settings);
    if (problem) return refuse('invalid_settings', problem);
    return accept({
      type: 'KeyIssued',
      data: {
        key_id: command.keyId,
        account_id: command.accountId,
        prefix: command.prefix,
        hash: command.hash,
        revealable: command.revealable,
        // A key with no group writes no `group` field: its event reads as before groups.
        ...withoutNullGroup(command.settings),
        at: command.now,
        ...(command.agent
          ? { agent_id: command.agent.agentId, issued_by: command.agent.issuedBy, ...(command.agent.requestId ? { request_id: command.agent.requestId } : {}) }
          : {}),
      },
    });
  }
  if (state.status === 'none' || state.status === 'deleted') return refuse('key_not_found', 'key not found');

  switch (command.type) {
    case 'UpdateKey': {
      if (state.status === 'revoked') return refuse('key_revoked', 'a revoked key cannot be changed');
      const problem = validate(command.changes);
      if (problem) return refuse('invalid_settings', problem);
      // Only fields whose value actually changes: a no-op update appends nothing.
      const changes = Object.fromEntries(
        Object.entries(stripUndefined(command.changes)).filter(
          ([field, value]) => JSON.stringify(value, bigintAsString) !== JSON.stringify(state.settings[field as keyof KeySettings], bigintAsString),
        ),
      ) as Partial<KeySettings>;
      if (Object.keys(changes).length === 0) return accept();
      return accept({ type: 'KeyUpdated', data: { changes, at: command.now } });
    }
    case 'RevealKey':
      if (!state.revealable) return refuse('key_not_revealable', 'this key was stored as a hash only and cannot be revealed');
      return accept({ type: 'KeyRevealed', data: { actor: command.actor, at: command.now } });
    case 'RevokeKey':
      if (state.status === 'revoked') return accept();
      return accept({ type: 'KeyRevoked', data: { reason: command.reason, at: command.now } });
    case 'DeleteKey':
      return accept({ type: 'KeyDeleted', data: { at: command.now } });
    default:
      return assertNever(command);
  }
}

export const keyDecider: Decider<KeyCommand, KeyState, KeyEvent, KeyErrorCode> = {
  initialState: initialKeyState,
  evolve,
  decide,
};
