import { taskStream, type CallRecord, type TaskEvent } from '../../events/catalog';
import type { EventStore } from '../../events/store/port';
import { CommandHandler, type Handled } from '../handle-command';
import type { Ledger } from '../ledger';
import { taskDecider, type TaskCommand, type TaskState } from './decider';
import { closingOf, taskCall } from './money';

/** Task states cached per process: a task is busy for minutes, then never written again. */
const TASK_STATES_KEPT = 2_000;

export type TaskHandled = Handled<TaskState>;

/**
 * The application side of media tasks: runs task commands through the decider, and closes a finished
 * task's hold on its wallet with the task's call-log row. Every caller (the HTTP submission, the
 * upstream poller, a run of the gateway's own, the expiry sweep, the recovery at start) ends a task
 * through `finish`, so a task's money is closed exactly once whoever gets there first: the task
 * stream refuses a second ending, the wallet a second closing of the hold.
 */
export class TaskService {
  readonly handler: CommandHandler<TaskCommand, TaskState, TaskEvent>;

  constructor(
    store: EventStore,
    private readonly ledger: Ledger,
    /** Told of each task whose hold this process closed, with its call-log row and what was captured (metrics). */
    private readonly onClosed: (call: CallRecord, captured: bigint) => void = () => {},
  ) {
    this.handler = new CommandHandler(store, taskDecider, TASK_STATES_KEPT);
  }

  /** The task as the log has it now (decisions that may refuse read it here, never a view). */
  async state(taskId: string): Promise<TaskState> {
    return (await this.handler.load(taskStream(taskId))).state;
  }

  /** A command that does not end the task (creation, submission, progress). */
  handle(taskId: string, command: TaskCommand, commandId?: string): Promise<TaskHandled> {
    return this.handler.handle(taskStream(taskId), command, commandId ? { commandId } : {});
  }

  /**
   * A command that may end the task, then the hold's closing. When the task had already ended
   * (`task_finished`), its closing is made again: the process that ended it may have died before it
   * closed the hold, and a closing the wallet already has changes nothing.
   */
  async finish(taskId: string, command: TaskCommand): Promise<TaskHandled> {
    const handled = await this.handle(taskId, command);
    if (handled.ok) await this.closeMoney(handled.state);
    else if (handled.error.code === 'task_finished') await this.closeMoney(await this.state(taskId));
    return handled;
  }

  /** Settles or releases a finished task's hold; a hold already closed (by this, or swept) is left as it is. */
  async closeMoney(state: TaskState): Promise<void> {
    const closing = closingOf(state);
    if (!closing) return;
    const call = taskCall(state);
    const result =
      closing.type === 'Settle'
        ? await this.ledger.settle(state.accountId, state.holdId, closing.amount, call)
        : await this.ledger.release(state.accountId, state.holdId, closing.reason, call);
    if (!result.ok && result.error.code !== 'hold_not_open') throw new Error(`could not close the hold of task ${state.taskId}: ${result.error.message}`);
    if (result.ok && result.position !== null) this.onClosed(call, closing.type === 'Settle' ? closing.amount : 0n);
  }

  idle(): Promise<void> {
    return this.handler.idle();
  }
}
