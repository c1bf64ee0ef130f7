import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Ledger } from '../commands/ledger';
import type { ProjectionRunner } from '../projections/runner/runner';
import type { Drain } from './drain';

/** After the grace: how long the ended calls get to write their last frame and settle before
 * every connection still open is cut. */
export const END_WAIT_MS = 10_000;
/** While draining, connections whose answer has gone out are closed this often (a hijacked
 * stream's connection becomes idle once it ends, and nothing else would close it). */
const REAP_EVERY_MS = 100;

export interface HttpShutdownOptions {
  /** SHUTDOWN_GRACE_S in milliseconds: how long calls in flight may go on. */
  readonly graceMs: number;
  /** Resolves when the grace must end at once (a second signal). */
  readonly hurry: Promise<void>;
  readonly log: FastifyBaseLogger;
  readonly endWaitMs?: number;
}

const after = (ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
};

/** Whether `done` settles within `ms` (or before `hurry`). */
async function within(done: Promise<unknown>, ms: number, hurry?: Promise<void>): Promise<boolean> {
  const timeout = after(ms);
  try {
    return await Promise.race([done.then(() => true), timeout.promise, ...(hurry ? [hurry.then(() => false as const)] : [])]);
  } finally {
    timeout.cancel();
  }
}

/**
 * The HTTP side of a graceful shutdown: the gateway drains at once (readiness fails, requests on
 * kept-alive connections are refused, see drainPlugin), stops accepting connections, and lets the
 * calls in flight finish for up to the grace. Past it, the calls still running are ended in their
 * protocol's way (Drain.endCalls); connections still open `END_WAIT_MS` later are cut. Resolves once
 * the server is closed and no call is in flight; returns how many calls were ended.
 */
export async function closeHttp(app: FastifyInstance, drain: Drain, options: HttpShutdownOptions): Promise<{ ended: number }> {
  drain.begin();
  const { log } = options;
  log.info({ inFlight: drain.inFlight, graceS: options.graceMs / 1000 }, 'shutting down: no new requests; the calls in flight may finish within the grace');
  const closed = app.close();
  const reaper = setInterval(() => app.server.closeIdleConnections?.(), REAP_EVERY_MS);
  const finished = Promise.all([closed, drain.idle()]);
  let ended = 0;
  try {
    if (!(await within(finished, options.graceMs, options.hurry))) {
      ended = drain.endCalls();
      if (ended > 0) log.warn({ ended }, 'shutdown grace over: the calls still in flight are ended (streams get their error frame, holds are settled on what was delivered)');
      if (!(await within(finished, options.endWaitMs ?? END_WAIT_MS))) {
        log.warn({ inFlight: drain.inFlight }, 'shutdown: connections still open after the calls were ended are cut');
        app.server.closeAllConnections?.();
      }
    }
    await closed;
    // A call ended above settles as its relay sees its stream end; the connection may close first.
    if (!(await within(drain.idle(), options.endWaitMs ?? END_WAIT_MS))) log.error({ inFlight: drain.inFlight }, 'shutdown: calls still in flight after the server closed');
  } finally {
    clearInterval(reaper);
  }
  return { ended };
}

/** How long the ledger's queued commands and the projections get to catch up at shutdown. */
export const FLUSH_MS = 10_000;
/** What the projections get even when the calls used the whole grace: enough to apply what this process
 * has just written (the ended calls' settlements), not a long lag. */
export const FLUSH_FLOOR_MS = 2_000;

/**
 * After the last call: the ledger appends what it has queued (the settlements of the calls that
 * just ended among them), and the projections apply the log towards its head, so that what this
 * process wrote is in the read models when it exits. The projections get what is left of the grace
 * (`deadline`; at least FLUSH_FLOOR_MS, at most FLUSH_MS) and stop between batches then, however far behind the
 * log they are: each batch's checkpoint is committed with its rows, and the next start goes on from
 * there. Failures are logged, not thrown: a hold whose settlement was lost is released by a sweeper.
 */
export async function flushLedger(ledger: Ledger, runner: ProjectionRunner, log: FastifyBaseLogger, flushMs = FLUSH_MS, deadline = Number.POSITIVE_INFINITY): Promise<void> {
  if (!(await within(ledger.idle(), flushMs))) log.error('shutdown: the ledger still had commands queued; a hold they would have settled is released by the hold sweeper');
  // Returns after the batch in hand: the background catch-up stops between batches.
  await runner.stop();
  // PROJECTIONS=external: the worker applies what this process appended, whether this process waits or not.
  if (!runner.applies) return;
  const budget = Math.min(flushMs, Math.max(FLUSH_FLOOR_MS, deadline - Date.now()));
  const flushed = runner.catchUpToHead(budget, true).then(
    () => null,
    (error: unknown) => error,
  );
  // The catch-up ends by itself between batches at its deadline; the extra second is for a batch in hand.
  const done = await within(flushed, budget + 1_000);
  const error = done ? await flushed : new Error('no progress in time');
  if (error !== null) log.warn({ err: error }, 'shutdown: the projections had not caught up with the log; they go on from their checkpoints at the next start');
}
