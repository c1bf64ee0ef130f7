import type { TaskService } from '../commands/task/service';

export interface BackgroundLog {
  error(fields: object, message: string): void;
}

/**
 * The calls the gateway runs itself for a task (an async image, async speech, a voice clone), in the
 * process that accepted it: the request that holds its inputs lives only here, so a run is not a
 * queued job and no other process can resume it. A run ends its task itself; a run that throws, or
 * that the shutdown interrupts, fails its task, refunded ("a task interrupted by a deployment is marked
 * failed with full refund").
 */
export class BackgroundRuns {
  private readonly runs = new Map<string, { readonly controller: AbortController; readonly done: Promise<void> }>();

  constructor(
    private readonly tasks: TaskService,
    private readonly now: () => number,
    private readonly log: BackgroundLog,
  ) {}

  get size(): number {
    return this.runs.size;
  }

  running(taskId: string): boolean {
    return this.runs.has(taskId);
  }

  /** Starts a run (none while one of the task runs here); `run` gets a signal that the shutdown aborts.
   * Never rejects. A run claims its task (`Claim`) before calling any upstream. */
  start(taskId: string, run: (signal: AbortSignal) => Promise<void>): void {
    // One run per task in this process; across processes the run's claim on the task stream decides.
    if (this.runs.has(taskId)) return;
    const controller = new AbortController();
    const done = (async () => {
      try {
        await run(controller.signal);
      } catch (error) {
        const interrupted = controller.signal.aborted;
        if (!interrupted) this.log.error({ err: error, taskId }, 'a task run failed in the gateway; the task is failed and refunded');
        await this.fail(taskId, interrupted);
      } finally {
        this.runs.delete(taskId);
      }
    })();
    this.runs.set(taskId, { controller, done });
  }

  private async fail(taskId: string, interrupted: boolean): Promise<void> {
    const error = interrupted
      ? { code: 'gateway_interrupted', message: 'the gateway shut down while the task ran; nothing was charged, submit it again' }
      : { code: 'internal_error', message: `internal error while the task ran; nothing was charged (task ${taskId})` };
    try {
      await this.tasks.finish(taskId, { type: 'Fail', outcome: 'failed', error, now: this.now() });
    } catch (failure) {
      // The expiry sweep ends it at its deadline instead.
      this.log.error({ err: failure, taskId }, 'could not fail a task whose run ended in error');
    }
  }

  /** The shutdown: runs get `graceMs` to end on their own; the rest are interrupted, and their tasks failed. */
  async close(graceMs: number): Promise<void> {
    const all = () => Promise.all([...this.runs.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([all(), grace]);
    clearTimeout(timer);
    for (const { controller } of this.runs.values()) controller.abort(new DOMException('the gateway is shutting down', 'AbortError'));
    await all();
  }
}
