import type { Dispatcher } from 'undici';
import type { ChannelConfig } from '../config/schema';
import { FAMILIES, isInFlight } from '../commands/task/families';
import type { TaskService } from '../commands/task/service';
import type { JobQueue } from '../jobs/port';
import type { TaskQueries } from '../projections/tasks/queries';
import { startChore } from '../jobs/chore';
import { BackgroundRuns } from './background';
import { DELIVERIES } from './families';
import { POLLER_SETTINGS, TaskPoller, type PollerSettings } from './poller';

export interface TaskWorkflowLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface TaskWorkflowDeps {
  readonly tasks: TaskService;
  readonly queries: TaskQueries;
  readonly jobs: JobQueue;
  readonly channel: (id: string) => ChannelConfig | undefined;
  readonly now: () => number;
  readonly log: TaskWorkflowLog;
  /** Resolves once the task views have caught up with the log (the recovery reads them). */
  readonly viewsCurrent: () => Promise<void>;
  /**
   * Whether this process is the only one that can be running the gateway's own task runs (embedded mode:
   * DATA_DIR is locked to one process). Then a run found in flight at start was interrupted by the last
   * stop and is failed at once; otherwise another instance may be running it, and its deadline decides.
   */
  readonly soleInstance: boolean;
  readonly poller?: Partial<PollerSettings>;
  /** How often overdue tasks are expired and unclosed holds closed (default 15 s). */
  readonly sweepEveryMs?: number;
  /** How often upstream tasks in flight without a poll job are adopted (default 60 s). */
  readonly adoptEveryMs?: number;
  readonly dispatcher?: Dispatcher;
}

/**
 * Everything that moves media tasks forward outside a request: the upstream poller (a job per task),
 * the gateway's own runs, the sweep that expires overdue tasks and closes holds a crash left open, and
 * the recovery at start that picks up every task in flight again from the task views.
 */
export class TaskWorkflows {
  readonly poller: TaskPoller;
  readonly background: BackgroundRuns;
  private stopSweep: () => void = () => {};
  private stopAdopt: () => void = () => {};
  /** Tasks created since are this process's own: the recovery leaves them to their runs. */
  private readonly startedAt: number;
  private recovering: Promise<void> | null = null;
  private closed = false;
  /** The recovery at start is still waiting for the views to catch up with the log. */
  private waitingForViews = false;

  constructor(private readonly deps: TaskWorkflowDeps) {
    this.poller = new TaskPoller({
      tasks: deps.tasks,
      jobs: deps.jobs,
      channel: deps.channel,
      deliveries: DELIVERIES,
      now: deps.now,
      settings: { ...POLLER_SETTINGS, ...deps.poller },
      log: deps.log,
      ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
    });
    this.background = new BackgroundRuns(deps.tasks, deps.now, deps.log);
    this.startedAt = deps.now();
    this.poller.register();
  }

  async start(): Promise<void> {
    await this.deps.jobs.start();
    this.stopSweep = startChore(() => this.sweep(), this.deps.sweepEveryMs ?? 15_000, (error) => this.deps.log.error({ err: error }, 'task sweep failed'));
    this.stopAdopt = startChore(() => this.adopt(), this.deps.adoptEveryMs ?? 60_000, (error) => this.deps.log.warn({ err: error }, 'adopting tasks without a poll job failed; tried again later'));
    // In the background: the gateway serves while the views catch up and the tasks are picked up.
    this.recovering = this.recover().catch((error: unknown) => this.deps.log.error({ err: error }, 'task recovery failed; the sweep picks tasks up at their deadline'));
  }

  /** Resolves when the recovery at start has run (tests, and the shutdown). */
  recovered(): Promise<void> {
    return this.recovering ?? Promise.resolve();
  }

  /** Every task in flight after a restart: upstream tasks are followed again, runs of this process failed. */
  async recover(): Promise<void> {
    this.waitingForViews = true;
    try {
      await this.deps.viewsCurrent();
    } finally {
      this.waitingForViews = false;
    }
    // Closed while the views caught up (a short-lived process): nothing to pick up here.
    if (this.closed) return;
    const now = this.deps.now();
    let followed = 0;
    let failed = 0;
    for (const row of await this.deps.queries.inFlight()) {
      if (FAMILIES[row.family].runs === 'upstream') {
        await this.poller.follow(row.task_id, 0);
        followed += 1;
      } else if (this.deps.soleInstance && row.created_at < this.startedAt && !this.background.running(row.task_id)) {
        await this.deps.tasks.finish(row.task_id, {
          type: 'Fail',
          outcome: 'failed',
          error: { code: 'gateway_interrupted', message: 'the gateway restarted while the task ran; nothing was charged, submit it again' },
          now,
        });
        failed += 1;
      }
    }
    const closed = await this.closeUnclosed(now);
    if (followed + failed + closed > 0) this.deps.log.info({ followed, failed, closed }, 'tasks in flight picked up after the start');
  }

  /** Expires tasks past their deadline, and closes the holds of finished tasks that a crash left open. */
  async sweep(): Promise<void> {
    const now = this.deps.now();
    for (const row of await this.deps.queries.overdue(now)) {
      const state = await this.deps.tasks.state(row.task_id);
      await this.poller.expire(state);
    }
    // A minute's slack: the process that ended the task is closing its hold right now.
    await this.closeUnclosed(now - 60);
  }

  /**
   * Gives a poll job to every upstream task in flight that has none: its queueing failed (Redis away), the
   * job was dropped after failing too often, or the instance that submitted it died before recording it
   * (a task still being submitted is its request's: one created a minute ago whose request died is not).
   * The task's own stream decides, not the view, which may not show yet that a task just ended; adding
   * the job of a task that has one changes nothing.
   */
  async adopt(): Promise<void> {
    const now = this.deps.now();
    for (const row of await this.deps.queries.inFlight()) {
      if (FAMILIES[row.family].runs !== 'upstream' || (row.phase === 'created' && row.created_at >= now - 60)) continue;
      if (isInFlight((await this.deps.tasks.state(row.task_id)).phase)) await this.poller.follow(row.task_id);
    }
  }

  private async closeUnclosed(finishedBefore: number): Promise<number> {
    let closed = 0;
    for (const row of await this.deps.queries.unclosed(finishedBefore)) {
      await this.deps.tasks.closeMoney(await this.deps.tasks.state(row.task_id));
      closed += 1;
    }
    return closed;
  }

  /** The shutdown: the gateway's own runs get `graceMs`, then are interrupted (failed, refunded); jobs stop. */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    this.stopSweep();
    this.stopAdopt();
    // A recovery still waiting for the views (projections far behind the log) is not waited for (it sees
    // `closed` when they get there); one under way ends first, within a second and the grace.
    let timer: NodeJS.Timeout | undefined;
    if (!this.waitingForViews)
      await Promise.race([this.recovering?.catch(() => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(1_000, graceMs))))]);
    clearTimeout(timer);
    await this.background.close(graceMs);
    await this.deps.jobs.close(Math.min(graceMs, 10_000));
  }
}
