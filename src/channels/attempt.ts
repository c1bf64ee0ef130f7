import type { Route } from './routing';
import type { Failure } from '../upstream/upstream-call';
import { callOf } from './health';
import { failover, type CallSignalState, type Verdict } from './failover';

/** A failed attempt on a route of a call of `account` (null: the gateway's own work): the failover decision,
 * its outcome reported to the route's board. */
export function attemptFailed(route: Route, failure: Failure, call: CallSignalState, startedAt: number, account: string | null): Verdict {
  const latencyMs = Math.round(performance.now() - startedAt);
  return route.board ? route.board.failed(route.channel.id, failure, call, latencyMs, account) : failover(failure, call, latencyMs);
}

/** An attempt on a route that the upstream answered (a stream: its headers). */
export function attemptAnswered(route: Route, startedAt: number, account: string | null): void {
  route.board?.record(route.channel.id, { kind: 'success', latencyMs: Math.round(performance.now() - startedAt) }, callOf(account));
}
