import { describe, expect, it } from 'vitest';
import type { WalletEvent } from '../events/catalog';
import { parseUsd } from '../money/usd';
import { givenWhenThen } from '../../test/support/decider';
import { decideOne, decideRound, type RoundCommand } from './round';
import { SIGNUP_GRANT, walletDecider, type WalletCommand } from './wallet/decider';
import { type WalletState } from './wallet/state';

// given the events of a stream / when these commands arrive together / then these events or
// these refusals, one per command: pure, no store, no clock.

const NOW = 1_700_000_000;
const usd = parseUsd;
const ACCOUNT = 'acct_round';
const { fold } = givenWhenThen(walletDecider);

const opened: WalletEvent[] = [
  { type: 'AccountOpened', data: { account_id: ACCOUNT, name: 'Ada', at: NOW } },
  { type: 'CreditGranted', data: { grant_id: `signup-${ACCOUNT}`, amount: SIGNUP_GRANT, reason: 'signup', at: NOW } },
];

const reserve = (holdId: string, amount: bigint): WalletCommand => ({
  type: 'Reserve',
  holdId,
  amount,
  keyId: null,
  spendCap: null,
  purpose: 'chat',
  expiresAt: NOW + 600,
  now: NOW,
});
const reserved = (holdId: string, amount: bigint): WalletEvent => ({
  type: 'FundsReserved',
  data: { hold_id: holdId, amount, key_id: null, purpose: 'chat', expires_at: NOW + 600, at: NOW },
});
const settle = (holdId: string, amount: bigint): WalletCommand => ({ type: 'Settle', holdId, amount, now: NOW });
const settled = (holdId: string, hold: bigint, captured: bigint): WalletEvent => ({
  type: 'HoldSettled',
  data: { hold_id: holdId, hold_amount: hold, captured, released: hold - captured, at: NOW },
});
const deactivate: WalletCommand = { type: 'Deactivate', reason: 'fraud', now: NOW };

type Command = RoundCommand<WalletCommand, WalletState, WalletEvent>;

/** `read`: the state was just read from the log; `cached`: it is this process's cache, maybe behind. */
function given(events: readonly WalletEvent[], as: 'read' | 'cached' = 'read') {
  const from = { state: fold(events), revision: BigInt(events.length) - 1n };
  return {
    from,
    when(...commands: (WalletCommand | Command)[]) {
      const round = decideRound(
        walletDecider,
        from,
        commands.map((c) => ('command' in c ? c : { command: c })),
        as === 'read',
      );
      return {
        /** Per command, in order: its events, or the code of its refusal. Returns the round. */
        then(expected: readonly (readonly WalletEvent[] | string)[]) {
          expect(round.stale).toBe(false);
          expect(round.outcomes.map((o) => (o.ok ? o.events : o.error.code))).toEqual(expected);
          return round;
        },
        thenStale() {
          expect(round.stale).toBe(true);
        },
      };
    },
  };
}

describe('a round of commands on one stream', () => {
  it('decides each command on the state the ones before it leave, and counts revisions on from the stream’s', () => {
    const round = given(opened)
      .when(reserve('h1', usd('10')), reserve('h2', usd('20')))
      .then([[reserved('h1', usd('10'))], [reserved('h2', usd('20'))]]);
    // Each caller is answered with the state right after its own command.
    expect(round.outcomes.map((o) => o.ok && [o.state.held, o.revision])).toEqual([
      [usd('10'), 2n],
      [usd('30'), 3n],
    ]);
    expect([round.state.held, round.revision, round.appends]).toEqual([usd('30'), 3n, 2]);
  });

  it('refuses a command the earlier ones of its round left no room for, and goes on with the next', () => {
    const round = given(opened)
      .when(reserve('h1', usd('30')), reserve('h2', usd('30')), reserve('h3', usd('10')))
      .then([[reserved('h1', usd('30'))], 'insufficient_funds', [reserved('h3', usd('10'))]]);
    expect([round.state.held, round.revision, round.appends]).toEqual([usd('40'), 3n, 2]);
  });

  it('leaves the state as it was after a refusal: the hold a refused reservation named is still free', () => {
    given(opened)
      .when(reserve('h1', usd('50')), reserve('h1', usd('5')))
      .then(['insufficient_funds', [reserved('h1', usd('5'))]]);
  });

  it('settles a hold reserved earlier in the same round, and refuses a second settlement of it', () => {
    given(opened)
      .when(reserve('h1', usd('10')), settle('h1', usd('4')), settle('h1', usd('4')))
      .then([[reserved('h1', usd('10'))], [settled('h1', usd('10'), usd('4'))], 'hold_not_open']);
  });

  it('accepts a command the state already answers with no events, and appends nothing for it', () => {
    const round = given(opened).when(deactivate, deactivate).then([[{ type: 'AccountDeactivated', data: { reason: 'fraud', at: NOW } }], []]);
    expect([round.revision, round.appends]).toEqual([2n, 1]);
  });

  it('starts a stream that does not exist yet at revision 0', () => {
    const round = given([])
      .when({ type: 'OpenAccount', accountId: ACCOUNT, name: 'Ada', trialGrant: SIGNUP_GRANT, now: NOW }, reserve('h1', usd('1')))
      .then([opened, [reserved('h1', usd('1'))]]);
    expect([round.revision, round.appends]).toEqual([2n, 3]);
  });

  it('gives a refusal only on a state just read: on a cached one the round is stale, to be decided again on a read', () => {
    // Another process may have topped the wallet up since the cache was folded.
    given(opened, 'cached').when(reserve('h1', usd('10')), reserve('h2', usd('100'))).thenStale();
    given(opened, 'read')
      .when(reserve('h1', usd('10')), reserve('h2', usd('100')))
      .then([[reserved('h1', usd('10'))], 'insufficient_funds']);
    // Accepted commands are decided on a cached state as on a read one.
    given(opened, 'cached')
      .when(reserve('h1', usd('10')))
      .then([[reserved('h1', usd('10'))]]);
  });

  it('keeps a decision made ahead on the very state the round reaches, and decides again one made on another state', () => {
    const start = given(opened);
    // Decided ahead, one after the other, while the round before was in flight.
    const h1 = decideOne(walletDecider, reserve('h1', usd('10')), start.from.state)!;
    const h2 = decideOne(walletDecider, reserve('h2', usd('20')), h1.state)!;
    // What was decided ahead is the round's decision, as it was (here a marker the decider would not give).
    const marker = reserved('h2', usd('1'));
    start.when({ command: reserve('h1', usd('10')), ahead: h1 }, { command: reserve('h2', usd('20')), ahead: { ...h2, events: [marker] } }).then([[reserved('h1', usd('10'))], [marker]]);
    // Decided ahead on a state that is not the round's (an equal one read again): decided again.
    const elsewhere = { from: fold(opened), events: [marker], state: h1.state };
    start.when({ command: reserve('h1', usd('10')), ahead: elsewhere }).then([[reserved('h1', usd('10'))]]);
  });

  it('decides nothing ahead for a refused command', () => {
    expect(decideOne(walletDecider, reserve('h1', usd('50')), fold(opened))).toBeNull();
  });
});
