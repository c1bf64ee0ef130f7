import type { ServerResponse } from 'node:http';
import type { CallSignal } from '../../upstream/upstream-call';

/**
 * The client's end of a streamed answer (a hijacked reply), written with back-pressure, and what
 * its socket accepted.
 *
 * Back-pressure: the relay writes the events of one upstream chunk, then, while the socket holds
 * more than its high-water mark, reads no further upstream chunk until the socket drains (TCP then
 * slows the upstream down). A client that does not read costs the gateway at most the socket's
 * buffer and one upstream chunk, not the whole answer.
 *
 * Accepted: a write is accepted once the socket handed all of it to the kernel (its write callback
 * ran without an error); what sits in the kernel's buffers counts as delivered, what is still in the
 * process's buffer when the client goes away or the call's deadline comes does not. Each write
 * carries the output characters of the upstream events seen since the previous write, so an
 * interrupted stream is billed on the characters of the writes the socket accepted.
 */
export class ClientStream {
  /** The client closed the connection, or the gateway closed it at the call's deadline. */
  gone = false;
  /** The deadline came while the client was not taking what was written. */
  stalled = false;
  private accepted = 0;
  private carried = 0;

  constructor(
    private readonly raw: ServerResponse,
    private readonly call: CallSignal,
  ) {
    raw.on('close', () => {
      if (raw.writableFinished) return;
      this.gone = true;
      call.abort();
    });
  }

  /** Output characters of the events seen since the last write; the next write carries them. */
  carry(chars: number) {
    this.carried += chars;
  }

  /** Output characters of the writes the socket has accepted so far. */
  get acceptedChars(): number {
    return this.accepted;
  }

  write(text: string) {
    if (this.gone) return;
    const chars = this.carried;
    this.carried = 0;
    this.raw.write(text, (error) => {
      if (!error) this.accepted += chars;
    });
  }

  /** Resolves at once while the socket is below its high-water mark; else once it drains, the
   * client goes away, or the call ends (at its deadline the connection is closed: nothing more
   * can be written to a client that does not read, and its buffer is let go). */
  async drained(): Promise<void> {
    if (this.gone || !this.raw.writableNeedDrain) return;
    await this.until('drain');
  }

  /** Ends the response. True once the socket accepted all of it; false if the client went away
   * or the call's deadline came first. */
  async end(): Promise<boolean> {
    if (this.gone) return false;
    this.raw.end();
    if (this.raw.writableFinished) return true;
    await this.until('finish');
    return this.raw.writableFinished;
  }

  private until(event: 'drain' | 'finish'): Promise<void> {
    const { raw, call } = this;
    return new Promise<void>((resolve) => {
      const done = () => {
        raw.off(event, done);
        raw.off('close', done);
        call.off('abort', done);
        // The call is over (its deadline) and the socket still holds what the client did not take:
        // nothing more can reach a client that does not read, so its connection and buffer go.
        if (call.aborted && !this.gone && !raw.writableFinished && raw.writableLength > 0) {
          this.stalled = call.expired;
          this.gone = true;
          raw.destroy();
        }
        resolve();
      };
      // Past the deadline, only an end the socket already took (its 'finish' is due) is waited for.
      if (call.aborted && raw.writableLength > 0) return done();
      raw.once(event, done);
      raw.once('close', done);
      if (!call.aborted) call.once('abort', done);
    });
  }
}
