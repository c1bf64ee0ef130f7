import type { Dispatcher } from 'undici';
import type { ChannelConfig } from '../config/schema';
import { isFinished, type TaskState } from '../commands/task/decider';
import type { TaskService } from '../commands/task/service';
import type { JobOutcome, JobQueue } from '../jobs/port';
import { cancelTask, fetchTask, tasksErrorMessage, type UpstreamTask } from '../upstream/protocols/tasks';
import { tryJson } from '../upstream/json';
import type { Delivery, DeliveryOf } from './delivery';

export const POLL_JOB = 'task.poll';

/** The job of one task: one per task at a time (its id), rescheduling itself until the task ends. */
export const pollJobId = (taskId: string) => `poll:${taskId}`;

export { POLLER_SETTINGS, type PollerSettings } from './poller-settings';
import type { PollerSettings } from './poller-settings';

export interface PollerDeps {
  readonly tasks: TaskService;
  readonly jobs: JobQueue;
  readonly channel: (id: string) => ChannelConfig | undefined;
  readonly deliveries: Partial<Record<string, DeliveryOf>>;
  readonly now: () => number;
  readonly settings: PollerSettings;
  readonly dispatcher?: Dispatcher;
  readonly log: { warn(fields: object, message: string): void };
}

/**
 * Follows upstream tasks to their end. Each run reads the task from its stream, asks the upstream once,
 * and records what changed: a run that finds nothing new appends nothing, and one that finds the task
 * ended (by another instance, a retried job, the expiry) only makes sure its hold is closed. So a job
 * delivered twice, or run by two instances, is harmless.
 */
export class TaskPoller {
  constructor(private readonly deps: PollerDeps) {}

  register(): void {
    this.deps.jobs.handle<{ taskId: string }>(POLL_JOB, (data) => this.run(data.taskId), { concurrency: 16 });
  }

  /** Starts following a task (a job already following it is left alone). */
  follow(taskId: string, delayMs = this.deps.settings.pollEveryMs): Promise<boolean> {
    return this.deps.jobs.add(POLL_JOB, { taskId }, { id: pollJobId(taskId), delayMs });
  }

  async run(taskId: string): Promise<JobOutcome> {
    const { tasks, now, settings } = this.deps;
    const state = await tasks.state(taskId);
    if (state.phase === 'none') return { done: true };
    if (isFinished(state.phase)) {
      await tasks.closeMoney(state);
      return { done: true };
    }
    const at = now();
    if (at >= state.deadline) {
      await this.expire(state);
      return { done: true };
    }
    if (!state.upstream) {
      // Its submitting request is still trying channels, or died before it recorded an answer.
      if (at < state.createdAt + settings.submitGraceS) return this.again(state, at);
      await tasks.finish(taskId, { type: 'Fail', outcome: 'failed', error: { code: 'submission_interrupted', message: 'the gateway stopped before the upstream accepted the task; nothing was charged' }, now: at });
      return { done: true };
    }
    const channel = this.deps.channel(state.upstream.channelId);
    if (!channel) {
      await tasks.finish(taskId, { type: 'Fail', outcome: 'failed', error: { code: 'channel_removed', message: `the channel ${state.upstream.channelId} that runs this task is no longer configured` }, now: at });
      return { done: true };
    }
    const answer = await fetchTask(channel, state.upstream.taskId, { timeoutMs: settings.requestTimeoutMs, ...(this.deps.dispatcher ? { dispatcher: this.deps.dispatcher } : {}) });
    if (!answer.ok) {
      const failure = answer.failure;
      if (failure.kind === 'status' && failure.status === 404) {
        await tasks.finish(taskId, { type: 'Fail', outcome: 'failed', error: { code: 'upstream_task_not_found', message: tasksErrorMessage(tryJson(failure.body)) ?? 'the upstream no longer knows this task' }, now: at });
        return { done: true };
      }
      // Anything else may pass (an outage, a restart upstream): ask again; the deadline ends the wait.
      this.deps.log.warn({ taskId, channelId: channel.id, failure: failure.kind, status: failure.kind === 'status' ? failure.status : undefined }, 'task poll failed; asking again later');
      return this.again(state, at);
    }
    return this.record(state, answer.value, at);
  }

  private async record(state: TaskState, upstream: UpstreamTask, at: number): Promise<JobOutcome> {
    const { tasks } = this.deps;
    switch (upstream.status) {
      case 'queued':
      case 'running':
        await tasks.handle(state.taskId, { type: 'Observe', running: upstream.status === 'running', progress: upstream.progress ?? null, now: at });
        return this.again(state, at);
      case 'succeeded': {
        const read = this.deps.deliveries[state.family];
        const delivered: Delivery | { invalid: string } = read ? read(upstream, state, at) : { invalid: `no reader for ${state.family} results` };
        if ('invalid' in delivered) {
          await tasks.finish(state.taskId, { type: 'Fail', outcome: 'failed', error: { code: 'upstream_result_invalid', message: delivered.invalid }, now: at });
          return { done: true };
        }
        await tasks.finish(state.taskId, { type: 'Succeed', ...delivered, now: at });
        return { done: true };
      }
      default: {
        const error = upstream.error ?? { code: `task_${upstream.status}`, message: `the upstream task ended ${upstream.status}` };
        await tasks.finish(state.taskId, { type: 'Fail', outcome: upstream.status, error, now: at });
        return { done: true };
      }
    }
  }

  /** The next poll, never later than the task's deadline. */
  private again(state: TaskState, at: number): JobOutcome {
    const untilDeadline = Math.max(0, (state.deadline - at) * 1000);
    return { againInMs: Math.max(10, Math.min(this.deps.settings.pollEveryMs, untilDeadline)) };
  }

  /** The gateway gives up on a task past its deadline: refunded, and the upstream asked to stop it. */
  async expire(state: TaskState): Promise<void> {
    const expired = await this.deps.tasks.finish(state.taskId, { type: 'Expire', now: this.deps.now() });
    // Only the call that expired it cancels it upstream: the caller's state may be older than the log
    // (the sweep finds tasks in views that lag), and an upstream may delete a finished task's record on a
    // DELETE. A crash between the two leaves the upstream task to run out; it was refunded either way.
    if (!expired.ok) return;
    const channel = state.upstream ? this.deps.channel(state.upstream.channelId) : undefined;
    if (channel && state.upstream) await cancelTask(channel, state.upstream.taskId, { timeoutMs: 10_000, ...(this.deps.dispatcher ? { dispatcher: this.deps.dispatcher } : {}) });
  }
}
