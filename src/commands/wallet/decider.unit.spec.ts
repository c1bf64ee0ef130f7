import { describe, expect, it } from 'vitest';
import { decodeEvent, type WalletEvent } from '../../events/catalog';
import { parseUsd } from '../../money/usd';
import { ADJUSTMENT_PART_CALLS, MINIMUM_TOPUP, SIGNUP_GRANT, decide, type WalletCommand, walletDecider } from './decider';
import { CLOSED_HOLD_GENERATION, available, evolve, initialWalletState } from './state';

function expectAccepted(decision: ReturnType<typeof decide>): WalletEvent[] {
  if (!decision.ok) throw new Error(`refused: ${decision.error.code}`);
  return [...decision.events];
}
import { givenWhenThen } from '../../../test/support/decider';

// ---------------------------------------------------------------------------
// given / when / then: pure, no I/O, no clock.
// ---------------------------------------------------------------------------

const NOW = 1_700_000_000;
const usd = parseUsd;

const { given, fold } = givenWhenThen(walletDecider);

// ---------------------------------------------------------------------------
// Event and command builders
// ---------------------------------------------------------------------------

const ACCOUNT = 'acc-1';

const opened: WalletEvent[] = [
  { type: 'AccountOpened', data: { account_id: ACCOUNT, name: 'Ada', at: NOW } },
  { type: 'CreditGranted', data: { grant_id: `signup-${ACCOUNT}`, amount: SIGNUP_GRANT, reason: 'signup', at: NOW } },
];

const toppedUp = (amount: bigint, topupId = 't-1'): WalletEvent => ({
  type: 'WalletToppedUp',
  data: { topup_id: topupId, amount, reference: `ref-${topupId}`, at: NOW },
});

const reserved = (holdId: string, amount: bigint, keyId: string | null = null): WalletEvent => ({
  type: 'FundsReserved',
  data: { hold_id: holdId, amount, key_id: keyId, purpose: 'chat', expires_at: NOW + 600, at: NOW },
});

const settled = (holdId: string, holdAmount: bigint, captured: bigint): WalletEvent => ({
  type: 'HoldSettled',
  data: {
    hold_id: holdId,
    hold_amount: holdAmount,
    captured,
    released: holdAmount > captured ? holdAmount - captured : 0n,
    at: NOW,
  },
});

const released = (holdId: string, amount: bigint, reason = 'upstream_error'): WalletEvent => ({
  type: 'HoldReleased',
  data: { hold_id: holdId, amount, reason, at: NOW },
});

const deactivated: WalletEvent = { type: 'AccountDeactivated', data: { reason: 'abuse', at: NOW } };
const reactivated: WalletEvent = { type: 'AccountReactivated', data: { at: NOW } };

const openAccount = (): WalletCommand => ({ type: 'OpenAccount', accountId: ACCOUNT, name: 'Ada', trialGrant: SIGNUP_GRANT, now: NOW });
const topUp = (amount: bigint, topupId = 't-1'): WalletCommand => ({ type: 'TopUp', topupId, amount, reference: `ref-${topupId}`, now: NOW });
const reserve = (holdId: string, amount: bigint, keyId: string | null = null, spendCap: bigint | null = null): WalletCommand => ({
  type: 'Reserve',
  holdId,
  amount,
  keyId,
  spendCap,
  purpose: 'chat',
  expiresAt: NOW + 600,
  now: NOW,
});
const settle = (holdId: string, amount: bigint): WalletCommand => ({ type: 'Settle', holdId, amount, now: NOW });
const release = (holdId: string, reason = 'upstream_error'): WalletCommand => ({ type: 'Release', holdId, reason, now: NOW });
const deactivate = (): WalletCommand => ({ type: 'Deactivate', reason: 'abuse', now: NOW });
const reactivate = (): WalletCommand => ({ type: 'Reactivate', now: NOW });
const setLimits = (rpm: number | null, concurrency: number | null): WalletCommand => ({ type: 'SetLimits', rpm, concurrency, now: NOW });

// ---------------------------------------------------------------------------

describe('wallet decider: constants', () => {
  it('uses nano-dollar units: 40.44 trial credit and a 134.8 minimum top-up', () => {
    expect(SIGNUP_GRANT).toBe(40_440_000_000n);
    expect(MINIMUM_TOPUP).toBe(134_800_000_000n);
  });
});

describe('wallet decider: OpenAccount', () => {
  it('opens the account and grants exactly 40.44 of trial credit', () => {
    const state = given().when(openAccount()).then(opened);
    expect(state.status).toBe('active');
    expect(state.accountId).toBe(ACCOUNT);
    expect(state.name).toBe('Ada');
    expect(state.createdAt).toBe(NOW);
    expect(state.balance).toBe(40_440_000_000n);
    expect(state.credited).toBe(40_440_000_000n);
    expect(state.held).toBe(0n);
    expect(available(state)).toBe(40_440_000_000n);
  });

  it('refuses to open the same account twice', () => {
    given(opened).when(openAccount()).thenRefused('account_exists');
  });

  it('refuses to open an account again even when it is inactive', () => {
    given([...opened, deactivated]).when(openAccount()).thenRefused('account_exists');
  });
});

describe('wallet decider: missing account', () => {
  const commands: [string, WalletCommand][] = [
    ['TopUp', topUp(MINIMUM_TOPUP)],
    ['Reserve', reserve('h-1', 1n)],
    ['Settle', settle('h-1', 1n)],
    ['Release', release('h-1')],
    ['Deactivate', deactivate()],
    ['Reactivate', reactivate()],
    ['SetLimits', setLimits(60, 5)],
  ];
  it.each(commands)('refuses %s with account_not_found', (_name, command) => {
    given().when(command).thenRefused('account_not_found');
  });
});

describe('wallet decider: TopUp', () => {
  it('accepts a top-up of exactly the minimum, 134.8', () => {
    const state = given(opened).when(topUp(usd('134.8'))).then([toppedUp(134_800_000_000n)]);
    expect(state.balance).toBe(SIGNUP_GRANT + 134_800_000_000n);
    expect(state.credited).toBe(SIGNUP_GRANT + 134_800_000_000n);
  });

  it('accepts a top-up above the minimum', () => {
    given(opened).when(topUp(usd('500'), 't-9')).then([toppedUp(usd('500'), 't-9')]);
  });

  it('is idempotent by reference: the same reference and amount credit once', () => {
    // topUp(amount, id) uses the reference `ref-${id}`: a retry carries the same reference, a new top-up id.
    const retry: WalletCommand = { type: 'TopUp', topupId: 't-2', amount: usd('200'), reference: 'ref-t-1', now: NOW };
    const state = given([...opened, toppedUp(usd('200'))]).when(retry).then([]);
    expect(state.balance).toBe(SIGNUP_GRANT + usd('200'));
    expect(state.topups.get('ref-t-1')).toEqual({ topupId: 't-1', amount: usd('200') });
  });

  it('refuses a known reference with another amount (topup_reference_conflict)', () => {
    const other: WalletCommand = { type: 'TopUp', topupId: 't-2', amount: usd('300'), reference: 'ref-t-1', now: NOW };
    const message = given([...opened, toppedUp(usd('200'))]).when(other).thenRefused('topup_reference_conflict');
    expect(message).toContain('200.00');
  });

  it('remembers the first top-up of a reference that the log holds twice (written before references were unique)', () => {
    const again: WalletEvent = { type: 'WalletToppedUp', data: { topup_id: 't-2', amount: usd('300'), reference: 'ref-t-1', at: NOW } };
    const state = fold([...opened, toppedUp(usd('200')), again]);
    expect(state.balance).toBe(SIGNUP_GRANT + usd('500'));
    expect(state.topups.get('ref-t-1')).toEqual({ topupId: 't-1', amount: usd('200') });
  });

  it('refuses 134.79 with topup_below_minimum and a message naming the minimum', () => {
    const message = given(opened).when(topUp(usd('134.79'))).thenRefused('topup_below_minimum');
    expect(message).toMatch(/134\.80?\b/);
  });

  it('refuses one unit below the minimum, zero and negative amounts', () => {
    for (const amount of [MINIMUM_TOPUP - 1n, 0n, -1n, -MINIMUM_TOPUP])
      given(opened).when(topUp(amount)).thenRefused('topup_below_minimum');
  });
});

describe('wallet decider: Reserve', () => {
  it('holds the amount and reduces what is available, not the balance', () => {
    const state = given(opened).when(reserve('h-1', usd('10'), 'k-1')).then([reserved('h-1', usd('10'), 'k-1')]);
    expect(state.balance).toBe(SIGNUP_GRANT);
    expect(state.held).toBe(usd('10'));
    expect(available(state)).toBe(usd('30.44'));
    expect(state.holds.get('h-1')).toMatchObject({ amount: usd('10'), keyId: 'k-1', expiresAt: NOW + 600 });
    expect(state.keys.get('k-1')).toEqual({ spent: 0n, held: usd('10') });
  });

  it("remembers the hold's call (model, endpoint, request id) for a release at its deadline", () => {
    const origin = { model: 'gpt-4o-mini', endpoint: 'chat-completions', requestId: 'req_1' };
    const withOrigin = { ...reserved('h-1', usd('1'), 'k-1'), data: { ...reserved('h-1', usd('1'), 'k-1').data, model: 'gpt-4o-mini', endpoint: 'chat-completions', request_id: 'req_1' } } as WalletEvent;
    const state = given(opened).when({ ...reserve('h-1', usd('1'), 'k-1'), origin } as WalletCommand).then([withOrigin]);
    expect(state.holds.get('h-1')!.origin).toEqual({ ...origin, reservedAt: NOW });
    // A reservation written before these fields existed: its purpose says the endpoint and model.
    const old = fold([...opened, { ...reserved('h-2', usd('1')), data: { ...reserved('h-2', usd('1')).data, purpose: 'chat gpt-4o' } } as WalletEvent]);
    expect(old.holds.get('h-2')!.origin).toEqual({ model: 'gpt-4o', endpoint: 'chat', requestId: 'h-2', reservedAt: NOW });
  });

  it('allows a reservation of exactly the available amount', () => {
    const state = given(opened).when(reserve('h-1', SIGNUP_GRANT)).then([reserved('h-1', SIGNUP_GRANT)]);
    expect(available(state)).toBe(0n);
  });

  it('refuses with insufficient_funds when available is one unit short', () => {
    given(opened).when(reserve('h-1', SIGNUP_GRANT + 1n)).thenRefused('insufficient_funds');
  });

  it('counts open holds against what is available', () => {
    const events = [...opened, reserved('h-1', usd('40'))];
    given(events).when(reserve('h-2', usd('0.44') + 1n)).thenRefused('insufficient_funds');
    given(events).when(reserve('h-2', usd('0.44'))).then([reserved('h-2', usd('0.44'))]);
  });

  it('refuses any positive reservation once the balance is negative', () => {
    const events = [...opened, reserved('h-1', usd('40')), settled('h-1', usd('40'), usd('41'))];
    expect(fold(events).balance).toBe(usd('-0.56'));
    given(events).when(reserve('h-2', 1n)).thenRefused('insufficient_funds');
  });

  it('refuses a negative amount', () => {
    given(opened).when(reserve('h-1', -1n)).thenRefused('invalid_amount');
  });

  it('refuses on an inactive account', () => {
    given([...opened, deactivated]).when(reserve('h-1', 1n)).thenRefused('account_inactive');
  });

  it('accepts again once the account is reactivated', () => {
    given([...opened, deactivated, reactivated]).when(reserve('h-1', 1n)).then([reserved('h-1', 1n)]);
  });

  it('refuses a duplicate id of an open hold', () => {
    given([...opened, reserved('h-1', 1n)]).when(reserve('h-1', 1n)).thenRefused('hold_exists');
  });

  // Every hold ends exactly once: a hold id, once closed, must not open a second hold.
  // (The accounts projection keys holds by (account_id, hold_id), so a reused id also breaks it.)
  it('refuses to reopen a hold id that was already settled', () => {
    given([...opened, reserved('h-1', 5n), settled('h-1', 5n, 3n)]).when(reserve('h-1', 5n)).thenRefused('hold_exists');
  });

  it('refuses to reopen a hold id that was already released', () => {
    given([...opened, reserved('h-1', 5n), released('h-1', 5n)]).when(reserve('h-1', 5n)).thenRefused('hold_exists');
  });

  // A hot wallet closes a hold per call: its state remembers the last CLOSED_HOLD_GENERATION to twice that many closed ids
  // (two generations), not every id for ever. Older ids are guarded by the event log (the ledger's test).
  it('remembers closed hold ids for two generations, then forgets the oldest', () => {
    const closedMany = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => [reserved(`h-${from + i}`, 1n), settled(`h-${from + i}`, 1n, 1n)]).flat();
    const oneGeneration = [...opened, toppedUp(usd('200')), ...closedMany(0, CLOSED_HOLD_GENERATION)];
    // h-0 is in the generation that just filled up, then in the previous one: still refused.
    given(oneGeneration).when(reserve('h-0', 1n)).thenRefused('hold_exists');
    const twoGenerations = [...oneGeneration, ...closedMany(CLOSED_HOLD_GENERATION, CLOSED_HOLD_GENERATION)];
    given(twoGenerations).when(reserve('h-0', 1n)).thenRefused('hold_exists');
    given(twoGenerations).when(reserve(`h-${CLOSED_HOLD_GENERATION}`, 1n)).thenRefused('hold_exists');
    // One more close starts a third generation: the first one is forgotten, the second is not.
    const three = [...twoGenerations, ...closedMany(2 * CLOSED_HOLD_GENERATION, 1)];
    given(three).when(reserve('h-0', 1n)).then([reserved('h-0', 1n)]);
    given(three).when(reserve(`h-${CLOSED_HOLD_GENERATION}`, 1n)).thenRefused('hold_exists');
    given(three).when(reserve(`h-${2 * CLOSED_HOLD_GENERATION}`, 1n)).thenRefused('hold_exists');
  });
});

describe('wallet decider: spend cap', () => {
  const cap = usd('10');
  // Key k-1 has spent 3 (settled) and holds 4 (open): 7 of its 10 cap is used.
  const history = [
    ...opened,
    toppedUp(usd('200')),
    reserved('h-1', usd('5'), 'k-1'),
    settled('h-1', usd('5'), usd('3')),
    reserved('h-2', usd('4'), 'k-1'),
    // Other keys' and keyless usage must not count against k-1.
    reserved('h-3', usd('20'), 'k-2'),
    reserved('h-4', usd('6'), 'k-2'),
    settled('h-4', usd('6'), usd('6')),
    reserved('h-5', usd('15'), null),
  ];

  it('tracks settled spend and open holds per key', () => {
    const state = fold(history);
    expect(state.keys.get('k-1')).toEqual({ spent: usd('3'), held: usd('4') });
    expect(state.keys.get('k-2')).toEqual({ spent: usd('6'), held: usd('20') });
  });

  it('allows a reservation that reaches the cap exactly (spent + held + amount == cap)', () => {
    given(history).when(reserve('h-6', usd('3'), 'k-1', cap)).then([reserved('h-6', usd('3'), 'k-1')]);
  });

  it('refuses with spend_cap_exceeded when spent + held + amount > cap', () => {
    given(history).when(reserve('h-6', usd('3') + 1n, 'k-1', cap)).thenRefused('spend_cap_exceeded');
  });

  it('counts settled spend alone', () => {
    const events = [...opened, reserved('h-1', usd('5'), 'k-1'), settled('h-1', usd('5'), usd('8'))];
    given(events).when(reserve('h-2', usd('2'), 'k-1', cap)).then([reserved('h-2', usd('2'), 'k-1')]);
    given(events).when(reserve('h-2', usd('2') + 1n, 'k-1', cap)).thenRefused('spend_cap_exceeded');
  });

  it('counts open holds alone', () => {
    const events = [...opened, reserved('h-1', usd('9'), 'k-1')];
    given(events).when(reserve('h-2', usd('1'), 'k-1', cap)).then([reserved('h-2', usd('1'), 'k-1')]);
    given(events).when(reserve('h-2', usd('1') + 1n, 'k-1', cap)).thenRefused('spend_cap_exceeded');
  });

  it('does not count a released hold', () => {
    const events = [...opened, reserved('h-1', usd('9'), 'k-1'), released('h-1', usd('9'))];
    given(events).when(reserve('h-2', cap, 'k-1', cap)).then([reserved('h-2', cap, 'k-1')]);
  });

  it("ignores other keys' usage: a fresh key gets its whole cap", () => {
    given(history).when(reserve('h-6', cap, 'k-3', cap)).then([reserved('h-6', cap, 'k-3')]);
    given(history).when(reserve('h-6', cap + 1n, 'k-3', cap)).thenRefused('spend_cap_exceeded');
  });

  it('does not apply when the key has no cap', () => {
    given(history).when(reserve('h-6', usd('100'), 'k-1', null)).then([reserved('h-6', usd('100'), 'k-1')]);
  });

  it('a zero cap refuses any positive reservation', () => {
    given(opened).when(reserve('h-1', 1n, 'k-1', 0n)).thenRefused('spend_cap_exceeded');
  });
});

describe('wallet decider: Settle', () => {
  const holding = [...opened, reserved('h-1', usd('10'), 'k-1')];

  it('captures the actual cost and releases the rest', () => {
    const state = given(holding)
      .when(settle('h-1', usd('2.5')))
      .then([{ type: 'HoldSettled', data: { hold_id: 'h-1', hold_amount: usd('10'), captured: usd('2.5'), released: usd('7.5'), at: NOW } }]);
    expect(state.balance).toBe(usd('37.94'));
    expect(state.held).toBe(0n);
    expect(state.captured).toBe(usd('2.5'));
    expect(state.holds.has('h-1')).toBe(false);
    expect(state.keys.get('k-1')).toEqual({ spent: usd('2.5'), held: 0n });
    expect(available(state)).toBe(usd('37.94'));
  });

  it('captures exactly the hold with nothing released', () => {
    given(holding)
      .when(settle('h-1', usd('10')))
      .then([{ type: 'HoldSettled', data: { hold_id: 'h-1', hold_amount: usd('10'), captured: usd('10'), released: 0n, at: NOW } }]);
  });

  it('captures zero and releases the whole hold', () => {
    const state = given(holding)
      .when(settle('h-1', 0n))
      .then([{ type: 'HoldSettled', data: { hold_id: 'h-1', hold_amount: usd('10'), captured: 0n, released: usd('10'), at: NOW } }]);
    expect(state.balance).toBe(SIGNUP_GRANT);
  });

  it('is never refused above the hold, and may drive the balance negative', () => {
    const events = [...opened, reserved('h-1', usd('40'), 'k-1')];
    const state = given(events)
      .when(settle('h-1', usd('50')))
      .then([{ type: 'HoldSettled', data: { hold_id: 'h-1', hold_amount: usd('40'), captured: usd('50'), released: 0n, at: NOW } }]);
    expect(state.balance).toBe(usd('-9.56'));
    expect(state.held).toBe(0n);
    expect(state.credited).toBe(state.balance + state.captured);
    expect(state.keys.get('k-1')).toEqual({ spent: usd('50'), held: 0n });
  });

  it('is accepted on an inactive account (in-flight requests still settle)', () => {
    given([...holding, deactivated])
      .when(settle('h-1', usd('1')))
      .then([{ type: 'HoldSettled', data: { hold_id: 'h-1', hold_amount: usd('10'), captured: usd('1'), released: usd('9'), at: NOW } }]);
  });

  it('refuses a negative capture', () => {
    given(holding).when(settle('h-1', -1n)).thenRefused('invalid_amount');
  });

  it('refuses an unknown hold with hold_not_open', () => {
    given(holding).when(settle('h-404', 1n)).thenRefused('hold_not_open');
  });

  it('refuses a hold that was already settled (every hold ends exactly once)', () => {
    given([...holding, settled('h-1', usd('10'), usd('1'))]).when(settle('h-1', usd('1'))).thenRefused('hold_not_open');
  });

  it('refuses a hold that was already released', () => {
    given([...holding, released('h-1', usd('10'))]).when(settle('h-1', usd('1'))).thenRefused('hold_not_open');
  });
});

describe('wallet decider: Release', () => {
  const holding = [...opened, reserved('h-1', usd('10'), 'k-1')];

  it('refunds the full hold', () => {
    const state = given(holding).when(release('h-1', 'expired')).then([released('h-1', usd('10'), 'expired')]);
    expect(state.balance).toBe(SIGNUP_GRANT);
    expect(state.held).toBe(0n);
    expect(state.captured).toBe(0n);
    expect(available(state)).toBe(SIGNUP_GRANT);
    expect(state.holds.size).toBe(0);
    expect(state.keys.get('k-1')).toEqual({ spent: 0n, held: 0n });
  });

  it('is accepted on an inactive account', () => {
    given([...holding, deactivated]).when(release('h-1')).then([released('h-1', usd('10'))]);
  });

  it('refuses an unknown hold with hold_not_open', () => {
    given(holding).when(release('h-404')).thenRefused('hold_not_open');
  });

  it('refuses a hold that was already released', () => {
    given([...holding, released('h-1', usd('10'))]).when(release('h-1')).thenRefused('hold_not_open');
  });

  it('refuses a hold that was already settled', () => {
    given([...holding, settled('h-1', usd('10'), usd('4'))]).when(release('h-1')).thenRefused('hold_not_open');
  });
});

describe('wallet decider: Deactivate / Reactivate', () => {
  it('deactivates an active account', () => {
    expect(given(opened).when(deactivate()).then([deactivated]).status).toBe('inactive');
  });

  it('is idempotent: deactivating an inactive account emits nothing', () => {
    given([...opened, deactivated]).when(deactivate()).then([]);
  });

  it('reactivates an inactive account', () => {
    expect(given([...opened, deactivated]).when(reactivate()).then([reactivated]).status).toBe('active');
  });

  it('is idempotent: reactivating an active account emits nothing', () => {
    given(opened).when(reactivate()).then([]);
  });

  it('keeps balances and holds across deactivation', () => {
    const before = fold([...opened, reserved('h-1', 5n)]);
    const after = fold([deactivated, reactivated], before);
    expect(after).toEqual({ ...before, status: 'active' });
  });
});

describe('wallet decider: SetLimits', () => {
  it('sets rpm and concurrency', () => {
    const state = given(opened)
      .when(setLimits(60, 4))
      .then([{ type: 'AccountLimitsSet', data: { rpm: 60, concurrency: 4, at: NOW } }]);
    expect(state.limits).toEqual({ rpm: 60, concurrency: 4 });
  });

  it('clears limits with null', () => {
    const state = given([...opened, { type: 'AccountLimitsSet', data: { rpm: 60, concurrency: 4, at: NOW } }])
      .when(setLimits(null, null))
      .then([{ type: 'AccountLimitsSet', data: { rpm: null, concurrency: null, at: NOW } }]);
    expect(state.limits).toEqual({ rpm: null, concurrency: null });
  });

  it('is accepted on an inactive account', () => {
    given([...opened, deactivated]).when(setLimits(10, null)).then([{ type: 'AccountLimitsSet', data: { rpm: 10, concurrency: null, at: NOW } }]);
  });

  // The catalog schema requires positive integers; an accepted event that fails it would be written
  // (the store does not validate on append) and then poison every later load of the stream.
  it('never accepts limits that its own event schema rejects (0, negative, fractional, beyond 32 bits)', () => {
    const invalid: [number | null, number | null][] = [
      [0, null],
      [-1, null],
      [1.5, null],
      [null, 0],
      [null, -3],
      // Above what the accounts projection's integer columns hold.
      [2 ** 31, null],
      [null, 1e15],
    ];
    const undecodable: string[] = [];
    for (const [rpm, concurrency] of invalid) {
      const decision = decide(setLimits(rpm, concurrency), fold(opened));
      if (!decision.ok) continue;
      for (const event of decision.events) {
        try {
          decodeEvent(event.type, event.data);
        } catch {
          undecodable.push(`rpm=${rpm} concurrency=${concurrency}`);
        }
      }
    }
    expect(undecodable, 'accepted SetLimits whose AccountLimitsSet event fails the catalog schema').toEqual([]);
  });
});

describe('wallet decider: purity', () => {
  it('every accepted event round-trips through the catalog codec', () => {
    const events = [
      ...opened,
      toppedUp(usd('134.8')),
      reserved('h-1', usd('3'), 'k-1'),
      settled('h-1', usd('3'), usd('4')),
      reserved('h-2', 7n),
      released('h-2', 7n),
      deactivated,
      reactivated,
    ];
    for (const event of events) {
      const wire = JSON.parse(JSON.stringify(event.data, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
      expect(decodeEvent(event.type, wire)).toEqual(event);
    }
  });

  it('decide does not mutate the state it is given', () => {
    const state = fold([...opened, reserved('h-1', usd('1'), 'k-1')]);
    const snapshot = structuredClone(state);
    for (const command of [settle('h-1', 1n), release('h-1'), reserve('h-2', 1n, 'k-1', usd('5')), deactivate(), topUp(MINIMUM_TOPUP)])
      decide(command, state);
    expect(state).toEqual(snapshot);
  });
});

describe('adjustments (re-rates)', () => {
  it('split a large re-rate into parts of at most ADJUSTMENT_PART_CALLS calls, appended together', () => {
    let state = initialWalletState;
    for (const event of expectAccepted(decide({ type: 'OpenAccount', accountId: 'a', name: 'a', trialGrant: SIGNUP_GRANT, now: 1 }, state))) state = evolve(state, event);
    const calls = Array.from({ length: 2 * ADJUSTMENT_PART_CALLS + 1 }, (_, i) => ({ requestId: `r${i}`, keyId: i % 2 ? 'k1' : null, oldCost: 10n, newCost: 13n }));
    const events = expectAccepted(decide({ type: 'Adjust', adjustmentId: 'adj', reference: 'fix', reason: 'r', model: 'm', calls, now: 2 }, state));
    expect(events.map((e) => (e.type === 'WalletAdjusted' ? [e.data.part, e.data.parts, e.data.calls.length] : null))).toEqual([
      [0, 3, ADJUSTMENT_PART_CALLS],
      [1, 3, ADJUSTMENT_PART_CALLS],
      [2, 3, 1],
    ]);
    for (const event of events) state = evolve(state, event);
    expect(state.balance).toBe(SIGNUP_GRANT - 3n * BigInt(calls.length));
    expect(state.keys.get('k1')?.spent).toBe(3n * BigInt(ADJUSTMENT_PART_CALLS));
    expect(state.credited).toBe(state.balance + state.captured + state.adjusted);
    const again = decide({ type: 'Adjust', adjustmentId: 'adj', reference: 'fix', reason: 'r', model: 'm', calls, now: 3 }, state);
    expect(again.ok ? null : again.error.code).toBe('adjustment_exists');
  });
});
