/** Commands decided and appended together at most. */
const MAX_BATCH = 256;
/** How long a deferrable command waits for company before it is appended alone. */
const LINGER_MS = 2;

/** What a lane queues: commands, and reads of the stream's state. */
export interface Queued<Kind extends 'command' | 'load'> {
  readonly kind: Kind;
  reject(error: unknown): void;
}

/** The commands and reads waiting for one stream, run in arrival order. */
export interface Lane<Command extends Queued<'command'>, Load extends Queued<'load'>, Ahead> {
  readonly jobs: (Command | Load)[];
  busy: boolean;
  linger: NodeJS.Timeout | null;
  /** While a round's append is in flight: the state after it and after every command queued
   * since, each decided on arrival exactly as the next round will decide it if the append
   * commits. null when unknown (no round in flight, or a queued command was refused). */
  ahead: Ahead | null;
}

/** What the owner of the lanes does with the jobs at the head of a lane. */
export interface LaneWork<Command extends Queued<'command'>, Load extends Queued<'load'>, Ahead> {
  /** Reads waiting together: one read of the stream answers them all. */
  read(streamId: string, loads: readonly Load[]): Promise<void>;
  /** Commands waiting together (at most MAX_BATCH): one round, one append. */
  round(streamId: string, commands: readonly Command[], lane: Lane<Command, Load, Ahead>): Promise<void>;
  /** A command arrived while a round of its lane is in flight. */
  queuedBehind(streamId: string, lane: Lane<Command, Load, Ahead>, command: Command): void;
}

/**
 * One writer per stream in this process: the commands and reads of a stream wait in its lane and
 * run in arrival order, so a hot wallet rarely conflicts with itself. A lane exists while it has
 * work; while one round of it is in flight, what arrives queues up and goes in the next round
 * together (group commit). A deferrable command (nobody waits for it) lingers a moment for
 * company before it starts a round of its own.
 */
export class Lanes<Command extends Queued<'command'>, Load extends Queued<'load'>, Ahead> {
  private readonly lanes = new Map<string, Lane<Command, Load, Ahead>>();
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly work: LaneWork<Command, Load, Ahead>) {}

  enqueue(streamId: string, job: Command | Load, deferrable: boolean) {
    let lane = this.lanes.get(streamId);
    if (!lane) {
      lane = { jobs: [], busy: false, linger: null, ahead: null };
      this.lanes.set(streamId, lane);
    }
    lane.jobs.push(job);
    if (lane.busy) {
      if (job.kind === 'command') this.work.queuedBehind(streamId, lane, job as Command);
      return;
    }
    if (deferrable) {
      if (!lane.linger) {
        const waiting = lane;
        lane.linger = setTimeout(() => this.drain(streamId, waiting), LINGER_MS);
      }
      return;
    }
    this.drain(streamId, lane);
  }

  /** Resolves when no command or read is queued or running for any stream. */
  idle(): Promise<void> {
    if (this.lanes.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private drain(streamId: string, lane: Lane<Command, Load, Ahead>) {
    if (lane.linger) clearTimeout(lane.linger);
    lane.linger = null;
    if (lane.busy) return;
    lane.busy = true;
    void (async () => {
      while (lane.jobs.length > 0) {
        const kind = lane.jobs[0]!.kind;
        // Reads waiting together share one read forward (a cache that went stale under load has
        // every request in flight asking for it at once); commands, one round.
        const most = kind === 'load' ? lane.jobs.length : MAX_BATCH;
        let n = 1;
        while (n < lane.jobs.length && n < most && lane.jobs[n]!.kind === kind) n++;
        const jobs = lane.jobs.splice(0, n);
        try {
          if (kind === 'load') await this.work.read(streamId, jobs as Load[]);
          else await this.work.round(streamId, jobs as Command[], lane);
        } catch (error) {
          // A bug in a decider must fail its callers, not leave the lane busy for ever.
          for (const job of jobs) job.reject(error);
        }
        lane.ahead = null;
      }
      lane.busy = false;
      this.lanes.delete(streamId);
      if (this.lanes.size === 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    })();
  }
}
