import type { DomainEvent } from '../events/catalog';
import type { Decider, DomainError } from './decision';
import type { Loaded } from './stream-cache';

/** A command's events, decided on `from`, and the state they lead to. */
export interface Decided<S, E extends DomainEvent> {
  readonly from: S;
  readonly events: readonly E[];
  readonly state: S;
}

/** A command as its round sees it. */
export interface RoundCommand<C, S, E extends DomainEvent> {
  readonly command: C;
  /** Decided ahead of the round, behind the round before while its append was in flight. */
  readonly ahead?: Decided<S, E> | undefined;
}

/** What became of one command of a round: its events and the state and revision right after them, or its refusal. */
export type Outcome<S, E extends DomainEvent> =
  | { readonly ok: true; readonly state: S; readonly revision: bigint; readonly events: readonly E[] }
  | { readonly ok: false; readonly error: DomainError };

export interface Round<S, E extends DomainEvent> {
  /** One per command, in order (fewer when `stale`). */
  readonly outcomes: readonly Outcome<S, E>[];
  /** After every accepted command. */
  readonly state: S;
  readonly revision: bigint;
  /** How many events the round appends. */
  readonly appends: number;
  /** A command was refused on a state that may be behind the log: a refusal is only given on a
   * state just read, so the round is to be decided again on one (its outcomes are left unfinished). */
  readonly stale: boolean;
}

/**
 * A round: the commands queued on one stream, decided one after the other, each on the state the
 * ones before it leave, so that their events can be appended together (group commit). Pure: the
 * caller reads the stream and appends. `fresh` says the state was just read from the log; on a
 * cached one a refusal may be the cache's fault (another process topped the wallet up), and the
 * round stops there. A refused command leaves the state as it was for the next.
 */
export function decideRound<C, S, E extends DomainEvent>(
  decider: Decider<C, S, E>,
  from: Loaded<S>,
  commands: readonly RoundCommand<C, S, E>[],
  fresh: boolean,
): Round<S, E> {
  let state = from.state;
  let revision = from.revision;
  let appends = 0;
  const outcomes: Outcome<S, E>[] = [];
  for (const { command, ahead } of commands) {
    let events: readonly E[];
    // A decision made ahead on this very state object (the round before committed as expected) is
    // the one deciding again would give; a state read since, even an equal one, is decided on again.
    if (ahead !== undefined && ahead.from === state) {
      events = ahead.events;
      state = ahead.state;
    } else {
      const decision = decider.decide(command, state);
      if (!decision.ok) {
        if (!fresh) return { outcomes, state, revision, appends, stale: true };
        outcomes.push({ ok: false, error: decision.error });
        continue;
      }
      events = decision.events;
      for (const event of events) state = decider.evolve(state, event);
    }
    revision += BigInt(events.length);
    appends += events.length;
    outcomes.push({ ok: true, state, revision, events });
  }
  return { outcomes, state, revision, appends, stale: false };
}

/** One command decided on `from`: its events and the state they lead to, or null when it is refused. */
export function decideOne<C, S, E extends DomainEvent>(decider: Decider<C, S, E>, command: C, from: S): Decided<S, E> | null {
  const decision = decider.decide(command, from);
  if (!decision.ok) return null;
  let state = from;
  for (const event of decision.events) state = decider.evolve(state, event);
  return { from, events: decision.events, state };
}
