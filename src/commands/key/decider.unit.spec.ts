import { describe, expect, it } from 'vitest';
import { decodeEvent, type KeyEvent, type KeySettings } from '../../events/catalog';
import { decide, evolve, initialKeyState, keyDecider, usability, type KeyCommand } from './decider';
import { givenWhenThen } from '../../../test/support/decider';

// ---------------------------------------------------------------------------
// given / when / then: pure, no I/O, no clock.
// ---------------------------------------------------------------------------

const NOW = 1_700_000_000;

const { given, fold } = givenWhenThen(keyDecider);

// ---------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------

const KEY_ID = 'key_1';
const HASH = 'a'.repeat(64);

const settings: KeySettings = {
  name: 'ci',
  allowed_models: ['gpt-x', 'claude-y'],
  expires_at: null,
  enabled: true,
  spend_cap: 5_000_000_000n,
};

const issue = (overrides: Partial<KeySettings> = {}, revealable = true): KeyCommand => ({
  type: 'IssueKey',
  keyId: KEY_ID,
  accountId: 'acc-1',
  prefix: 'sk-abcdefgh-',
  hash: HASH,
  revealable,
  settings: { ...settings, ...overrides },
  now: NOW,
});

const issued = (overrides: Partial<KeySettings> = {}, revealable = true): KeyEvent => ({
  type: 'KeyIssued',
  data: {
    key_id: KEY_ID,
    account_id: 'acc-1',
    prefix: 'sk-abcdefgh-',
    hash: HASH,
    revealable,
    ...settings,
    ...overrides,
    at: NOW,
  },
});

const update = (changes: Partial<KeySettings>): KeyCommand => ({ type: 'UpdateKey', changes, now: NOW + 1 });
const updated = (changes: Partial<KeySettings>): KeyEvent => ({ type: 'KeyUpdated', data: { changes, at: NOW + 1 } });
const reveal = (actor = 'admin:ada'): KeyCommand => ({ type: 'RevealKey', actor, now: NOW + 2 });
const revealed = (actor = 'admin:ada'): KeyEvent => ({ type: 'KeyRevealed', data: { actor, at: NOW + 2 } });
const revoke = (reason = 'leaked'): KeyCommand => ({ type: 'RevokeKey', reason, now: NOW + 3 });
const revoked = (reason = 'leaked'): KeyEvent => ({ type: 'KeyRevoked', data: { reason, at: NOW + 3 } });
const del = (): KeyCommand => ({ type: 'DeleteKey', now: NOW + 4 });
const deleted: KeyEvent = { type: 'KeyDeleted', data: { at: NOW + 4 } };

// ---------------------------------------------------------------------------

describe('key decider: IssueKey', () => {
  it('issues an active key with its settings, prefix and hash (never the raw key)', () => {
    const state = given().when(issue()).then([issued()]);
    expect(state).toEqual({
      status: 'active',
      keyId: KEY_ID,
      accountId: 'acc-1',
      prefix: 'sk-abcdefgh-',
      hash: HASH,
      revealable: true,
      // A key issued with no group has none (null): the event carries no `group` field.
      settings: { ...settings, group: null },
      createdAt: NOW,
      agentId: null,
      requestId: null,
    });
  });

  it('issues an agent key bound to its agent, naming who issued it and its request', () => {
    const command = { ...issue(), agent: { agentId: 'agt_1', issuedBy: 'acct_admin', requestId: 'kreq_1' } } as KeyCommand;
    const event = { ...issued(), data: { ...issued().data, agent_id: 'agt_1', issued_by: 'acct_admin', request_id: 'kreq_1' } } as KeyEvent;
    const state = given().when(command).then([event]);
    expect([state.agentId, state.requestId]).toEqual(['agt_1', 'kreq_1']);
  });

  it('issues a hash-only key that is not revealable', () => {
    expect(given().when(issue({}, false)).then([issued({}, false)]).revealable).toBe(false);
  });

  it('refuses to issue the same key twice', () => {
    given([issued()]).when(issue()).thenRefused('key_exists');
  });

  it('refuses an empty name and a negative spend cap', () => {
    given().when(issue({ name: '   ' })).thenRefused('invalid_settings', 'name');
    given().when(issue({ spend_cap: -1n })).thenRefused('invalid_settings', 'spend cap');
  });

  it('emits an event that round-trips through the catalog codec', () => {
    const decision = decide(issue(), initialKeyState);
    if (!decision.ok) expect.fail(decision.error.message);
    for (const event of decision.events) {
      const wire = JSON.parse(JSON.stringify(event.data, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
      expect(decodeEvent(event.type, wire)).toEqual(event);
    }
  });
});

describe('key decider: UpdateKey', () => {
  it('records only the fields that the command changes', () => {
    const state = given([issued()]).when(update({ name: 'prod' })).then([updated({ name: 'prod' })]);
    expect(state.settings).toEqual({ ...settings, group: null, name: 'prod' });
  });

  it('drops fields that are explicitly undefined', () => {
    given([issued()])
      .when(update({ enabled: false, name: undefined, expires_at: undefined }))
      .then([updated({ enabled: false })]);
  });

  it('keeps explicit nulls (clearing a setting is a change)', () => {
    const state = given([issued()])
      .when(update({ allowed_models: null, spend_cap: null }))
      .then([updated({ allowed_models: null, spend_cap: null })]);
    expect(state.settings).toEqual({ ...settings, group: null, allowed_models: null, spend_cap: null });
  });

  it('emits nothing for an empty change', () => {
    given([issued()]).when(update({})).then([]);
    given([issued()]).when(update({ name: undefined, enabled: undefined })).then([]);
  });

  it('applies successive updates on top of each other', () => {
    const state = fold([issued(), updated({ name: 'a' }), updated({ expires_at: NOW + 100 }), updated({ enabled: false })]);
    expect(state.settings).toEqual({ ...settings, group: null, name: 'a', expires_at: NOW + 100, enabled: false });
  });

  it('binds and unbinds a channel group: a change like any setting, an unchanged group appends nothing', () => {
    given().when(issue({ group: 'premium' })).then([issued({ group: 'premium' })]);
    given([issued()]).when(update({ group: 'premium' })).then([updated({ group: 'premium' })]);
    given([issued({ group: 'premium' })]).when(update({ group: null })).then([updated({ group: null })]);
    given([issued()]).when(update({ group: null })).then([]);
    const state = [issued({ group: 'premium' }), updated({ group: null })].reduce(evolve, initialKeyState);
    expect(state.settings.group).toBeNull();
  });

  it('refuses invalid settings', () => {
    given([issued()]).when(update({ name: '' })).thenRefused('invalid_settings');
    given([issued()]).when(update({ spend_cap: -5n })).thenRefused('invalid_settings');
  });

  it('refuses an update after revocation', () => {
    given([issued(), revoked()]).when(update({ name: 'x' })).thenRefused('key_revoked');
  });

  it('refuses an update of a deleted or unknown key', () => {
    given([issued(), deleted]).when(update({ name: 'x' })).thenRefused('key_not_found');
    given().when(update({ name: 'x' })).thenRefused('key_not_found');
  });
});

describe('key decider: RevokeKey', () => {
  it('revokes an active key', () => {
    expect(given([issued()]).when(revoke()).then([revoked()]).status).toBe('revoked');
  });

  it('is idempotent: revoking a revoked key emits nothing', () => {
    given([issued(), revoked()]).when(revoke('again')).then([]);
  });

  it('refuses an unknown or deleted key', () => {
    given().when(revoke()).thenRefused('key_not_found');
    given([issued(), deleted]).when(revoke()).thenRefused('key_not_found');
  });
});

describe('key decider: DeleteKey', () => {
  it('deletes an active key and makes it unrevealable', () => {
    const state = given([issued()]).when(del()).then([deleted]);
    expect(state.status).toBe('deleted');
    expect(state.revealable).toBe(false);
  });

  it('deletes a revoked key', () => {
    given([issued(), revoked()]).when(del()).then([deleted]);
  });

  it('refuses every later command with key_not_found', () => {
    const gone = given([issued(), deleted]);
    for (const command of [del(), reveal(), revoke(), update({ name: 'x' })]) gone.when(command).thenRefused('key_not_found');
  });

  it('refuses to re-issue a deleted key id', () => {
    given([issued(), deleted]).when(issue()).thenRefused('key_exists');
  });
});

describe('key decider: RevealKey', () => {
  it('records a KeyRevealed audit event and changes no state', () => {
    const before = fold([issued()]);
    const after = given([issued()]).when(reveal('admin:bob')).then([revealed('admin:bob')]);
    expect(after).toEqual(before);
  });

  it('still reveals a revoked key (the raw key stays revealable until deleted)', () => {
    given([issued(), revoked()]).when(reveal()).then([revealed()]);
  });

  it('refuses a hash-only key with key_not_revealable', () => {
    given([issued({}, false)]).when(reveal()).thenRefused('key_not_revealable');
  });

  it('refuses after delete with key_not_found', () => {
    given([issued(), deleted]).when(reveal()).thenRefused('key_not_found');
  });

  it('refuses an unknown key with key_not_found', () => {
    given().when(reveal()).thenRefused('key_not_found');
  });
});

describe('key decider: usability()', () => {
  const at = NOW + 1000;

  it('is null for an active, enabled, unexpired key', () => {
    expect(usability(fold([issued()]), at)).toBeNull();
    expect(usability(fold([issued({ expires_at: at + 1 })]), at)).toBeNull();
  });

  it("is 'revoked' for a disabled key", () => {
    expect(usability(fold([issued({ enabled: false })]), at)).toBe('revoked');
    expect(usability(fold([issued(), updated({ enabled: false })]), at)).toBe('revoked');
  });

  it("is null again once a disabled key is re-enabled", () => {
    expect(usability(fold([issued(), updated({ enabled: false }), updated({ enabled: true })]), at)).toBeNull();
  });

  it("is 'revoked' for a revoked key", () => {
    expect(usability(fold([issued(), revoked()]), at)).toBe('revoked');
  });

  it("is 'revoked' for a deleted key", () => {
    expect(usability(fold([issued(), deleted]), at)).toBe('revoked');
  });

  it("is 'revoked' for an unknown key", () => {
    expect(usability(initialKeyState, at)).toBe('revoked');
  });

  it("is 'expired' when expires_at <= now", () => {
    expect(usability(fold([issued({ expires_at: at })]), at)).toBe('expired');
    expect(usability(fold([issued({ expires_at: at - 1 })]), at)).toBe('expired');
    expect(usability(fold([issued(), updated({ expires_at: at })]), at)).toBe('expired');
  });

  it("prefers 'revoked' over 'expired'", () => {
    expect(usability(fold([issued({ expires_at: at - 1 }), revoked()]), at)).toBe('revoked');
  });
});
