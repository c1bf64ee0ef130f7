import { createHash } from 'node:crypto';
import type { IdempotentCallEvent } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

/**
 * The runs of one Idempotency-Key of one account, as the ledger remembers them (stream
 * `idempotent-call-{digest}`). A run is one hold: its id is derived from the key and the run's
 * number, so a second reservation for the same run meets `hold_exists` in the wallet (its state
 * or, for a hold it no longer remembers, the event log). A new run, with a new hold id, begins
 * only when nothing of the last one can have been billed: it was released, or its retention passed.
 */

/** The key's digest: 128 bits of SHA-256 over the account and the key, the stream's name and the
 * stem of its hold ids (hold ids are per wallet; the account in the digest keeps event ids apart). */
export function idempotencyDigest(accountId: string, key: string): string {
  return createHash('sha256').update(`${accountId}\n${key}`).digest('hex').slice(0, 32);
}

const HOLD_PREFIX = 'idem_';

export const idempotentHoldId = (digest: string, run: number) => `${HOLD_PREFIX}${digest}_${run}`;

/** The digest of an idempotent call's hold id; null for any other hold. */
export function digestOfHold(holdId: string): string | null {
  const match = /^idem_([0-9a-f]{32})_\d+$/.exec(holdId);
  return match ? match[1]! : null;
}

export interface Run {
  readonly holdId: string;
  readonly fingerprint: string;
  /** The request that began the run (its call-log rows carry it). */
  readonly requestId: string;
  readonly startedAt: number;
  readonly released: boolean;
}

export interface IdempotentCallState {
  /** Runs begun so far: the next run's number. */
  readonly runs: number;
  readonly last: Run | null;
}

export const initialIdempotentCallState: IdempotentCallState = { runs: 0, last: null };

export type IdempotentCallCommand =
  | {
      type: 'Start';
      accountId: string;
      digest: string;
      fingerprint: string;
      requestId: string;
      /** The spec's 7 days: a run older than this no longer counts. */
      retentionSeconds: number;
      now: number;
    }
  | { type: 'Release'; holdId: string; now: number };

export type IdempotentCallErrorCode = 'idempotency_key_reuse';

export function evolve(state: IdempotentCallState, event: IdempotentCallEvent): IdempotentCallState {
  switch (event.type) {
    case 'IdempotentCallStarted':
      return {
        runs: state.runs + 1,
        last: { holdId: event.data.hold_id, fingerprint: event.data.fingerprint, requestId: event.data.request_id, startedAt: event.data.at, released: false },
      };
    case 'IdempotentCallReleased':
      if (!state.last || state.last.holdId !== event.data.hold_id) return state;
      return { runs: state.runs, last: { ...state.last, released: true } };
    default:
      return state;
  }
}

/**
 * Start: a new run when there is none that counts (never run, released, or past retention);
 * otherwise the last run again (no event), which the caller resumes by reserving its hold: the
 * wallet says whether that hold is new (never reserved: run it), open (in flight) or closed
 * (billed). A different request under a run that counts is the client's mistake.
 */
export function decide(command: IdempotentCallCommand, state: IdempotentCallState): Decision<IdempotentCallEvent, IdempotentCallErrorCode> {
  switch (command.type) {
    case 'Start': {
      const last = state.last;
      if (last && !last.released && last.startedAt + command.retentionSeconds > command.now) {
        if (last.fingerprint !== command.fingerprint)
          return refuse('idempotency_key_reuse', 'this Idempotency-Key was already used with a different request');
        return accept();
      }
      return accept({
        type: 'IdempotentCallStarted',
        data: {
          account_id: command.accountId,
          hold_id: idempotentHoldId(command.digest, state.runs),
          fingerprint: command.fingerprint,
          request_id: command.requestId,
          at: command.now,
        },
      });
    }
    case 'Release':
      if (!state.last || state.last.holdId !== command.holdId || state.last.released) return accept();
      return accept({ type: 'IdempotentCallReleased', data: { hold_id: command.holdId, at: command.now } });
    default:
      return assertNever(command);
  }
}

export const idempotentCallDecider: Decider<IdempotentCallCommand, IdempotentCallState, IdempotentCallEvent, IdempotentCallErrorCode> = {
  initialState: initialIdempotentCallState,
  evolve,
  decide,
};
