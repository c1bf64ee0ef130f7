import type { FastifyRequest } from 'fastify';
import type { IdempotentRefusal, Ledger, Result } from '../commands/ledger';
import { traceHold, traceReservation } from '../tracing/spans';
import type { CallSignal } from '../upstream/upstream-call';
import { refuseHold, type CallFacts } from './billable-call';
import { GatewayError, type ErrorCode } from './errors';
import { REFUSAL_MESSAGES } from './plugins/idempotency';

export interface CallHold {
  readonly amount: bigint;
  /** `{endpoint} {model}`, e.g. `videos.generations seedance-1-0-pro`. */
  readonly purpose: string;
  /** Seconds until the hold sweeper may release the hold if nobody settles it. */
  readonly ttlSeconds: number;
}

/** A run of an Idempotency-Key the ledger will not start again, as the client is told. */
export function idempotentRefusal(code: IdempotentRefusal, requestId: string): GatewayError {
  if (code !== 'idempotency_billed') return new GatewayError(code, REFUSAL_MESSAGES[code]);
  return new GatewayError(
    'idempotency_response_not_cached',
    `The request with this Idempotency-Key succeeded and was billed (request ${requestId}; its call-log row has the result), but its response was not kept: the gateway stopped before recording it. Use a new key to run it again.`,
  );
}

/** What the ledger is asked to hold for a call: its amount, the key and its cap, and where it came from. */
function reservationOf(facts: CallFacts, hold: CallHold) {
  const { request } = facts;
  const caller = request.caller!;
  return {
    amount: hold.amount,
    keyId: caller.keyId,
    spendCap: caller.key.settings.spend_cap,
    purpose: hold.purpose,
    ttlSeconds: hold.ttlSeconds,
    origin: { model: facts.model, endpoint: facts.endpoint, requestId: request.id },
  };
}

/**
 * Reserves a billable call's hold and returns its id. Under an Idempotency-Key the hold id comes from
 * the key (the ledger bills its run once, whatever became of the key's record in `idempotency_keys`
 * after a crash); otherwise it is the request id. A refusal (balance, spend cap, an inactive account, a
 * run of the key in flight or billed) goes through `reject`, which records the call and throws.
 */
export async function holdCall(ledger: Ledger, facts: CallFacts, hold: CallHold, reject: (code: ErrorCode, message: string) => never): Promise<string> {
  const { request } = facts;
  const caller = request.caller!;
  const reservation = reservationOf(facts, hold);
  const idempotency = request.idempotency;
  if (!idempotency) {
    const holdId = request.id;
    const reserved = await traceReservation(request, { amount: hold.amount, holdId }, () => ledger.reserve(caller.accountId, { ...reservation, holdId }));
    if (!reserved.ok) return refuseHold(reserved.error, reject);
    return holdId;
  }
  const { key, fingerprint } = idempotency.claim;
  const reserved = await traceReservation(request, reservation, () =>
    ledger.reserveIdempotent(caller.accountId, reservation, { key, fingerprint, requestId: request.id, retentionSeconds: idempotency.retentionSeconds }),
  );
  if (reserved.ok) return reserved.holdId;
  const { error } = reserved;
  if (error.code === 'idempotency_key_reuse' || error.code === 'idempotency_in_flight' || error.code === 'idempotency_billed') {
    const refusal = idempotentRefusal(error.code, 'requestId' in error ? error.requestId : '');
    return reject(refusal.code, refusal.message);
  }
  return refuseHold(error, reject);
}

const standing = (result: Result<unknown>) => result.ok;
const fallen = () => false;

/**
 * A hold decided early (the chat relay's, `Ledger.reserveEarly`): the upstream request may leave once
 * `decided` says yes; the commit is awaited (`committed()`) before anything reaches the client, before a
 * settlement and before another channel is tried. A class: nothing is allocated for it per call beyond
 * the object itself (the relay is the hot path).
 */
export class EarlyHold {
  /** Whether the commit has landed, either way (once `guard` watches it). */
  known = false;

  private constructor(
    readonly decided: Promise<Result<unknown>>,
    private readonly commit: Promise<Result<unknown>>,
    private readonly reject: (code: ErrorCode, message: string) => never,
  ) {}

  /** Places the hold of `facts`' call, its id the request's. */
  static place(ledger: Ledger, facts: CallFacts, hold: CallHold, reject: (code: ErrorCode, message: string) => never): EarlyHold {
    const request = facts.request;
    const caller = request.caller!;
    const holdId = request.id;
    const { decided, committed } = traceHold(request, { amount: hold.amount, holdId }, () =>
      ledger.reserveEarly(caller.accountId, { ...reservationOf(facts, hold), holdId }),
    );
    return new EarlyHold(decided, committed, reject);
  }

  /** Resolves once the commit landed; throws the client's refusal (a rejected call) if the commit turned the
   * decision over (another instance spent the wallet first). */
  async committed(): Promise<void> {
    const result = await this.commit;
    if (!result.ok) refuseHold(result.error, this.reject);
  }

  /** Whether the hold was committed, for a release after a fault of the gateway's own: records nothing, never throws. */
  stands(): Promise<boolean> {
    return this.commit.then(standing, fallen);
  }

  /** From now on, a commit that turns the decision over stops `signal`: nothing may be served without a committed hold. */
  guard(signal: CallSignal, request: FastifyRequest): void {
    this.commit.then(
      (result) => {
        this.known = true;
        if (result.ok) return;
        signal.abort();
        request.log.warn({ holdId: request.id, code: result.error.code }, 'hold refused at commit after an early decision: upstream request stopped');
      },
      () => {
        this.known = true;
        signal.abort();
      },
    );
  }
}
