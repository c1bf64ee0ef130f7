import type { CallSignal } from '../upstream/upstream-call';

/**
 * A gateway's shutdown as the requests see it: once `begin()` is called the gateway is draining
 * (`/readyz` answers 503, new requests are refused), and the upstream calls still in flight are
 * known by their signals so that, when the grace runs out, each can be ended in its own
 * protocol's way (`endCalls()`: a stream gets its error frame and is billed on what was
 * delivered; a call with no answer yet is released and answered 503).
 */
export class Drain {
  private began = false;
  private ended = false;
  private readonly calls = new Set<CallSignal>();
  private idleWaiters: Array<() => void> = [];

  /** The shutdown began: nothing new is accepted. */
  get draining(): boolean {
    return this.began;
  }

  /** Calls in flight (chat and image calls that hold money). */
  get inFlight(): number {
    return this.calls.size;
  }

  begin(): void {
    this.began = true;
  }

  /** Registers a call until the returned function is called (once it is over). A call that
   * starts after the grace ran out is ended at once. */
  track(call: CallSignal): () => void {
    this.calls.add(call);
    if (this.ended) call.endForShutdown();
    return () => {
      this.calls.delete(call);
      if (this.calls.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    };
  }

  /** The grace ran out: every call in flight ends now, and any that starts from now on. */
  endCalls(): number {
    this.ended = true;
    const count = this.calls.size;
    for (const call of this.calls) call.endForShutdown();
    return count;
  }

  /** Resolves once no call is in flight. */
  idle(): Promise<void> {
    if (this.calls.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
