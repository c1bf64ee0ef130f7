import type { TaskBilling, TaskEvent, TaskFamily, TaskRun as TaskRunData } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';
import { FAMILIES, isFinished, isInFlight, type FamilyRules, type Outcome, type Phase } from './families';

export interface TaskError {
  readonly code: string;
  readonly message: string;
}

/** What a call the gateway ran itself for the task did (TaskRun): the call log's attempts, channel, tokens. */
export interface TaskRun {
  readonly attempts: number;
  readonly channelId: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** What a task is given at its creation, and keeps. */
export interface TaskTerms {
  readonly taskId: string;
  readonly family: TaskFamily;
  readonly accountId: string;
  readonly keyId: string | null;
  readonly model: string;
  readonly endpoint: string;
  readonly requestId: string;
  readonly holdId: string;
  readonly reserved: bigint;
  readonly billing: TaskBilling;
  readonly basis: number;
  readonly params: Readonly<Record<string, unknown>>;
  readonly visible: boolean;
  readonly deadline: number;
}

export interface TaskState extends TaskTerms {
  readonly phase: Phase;
  readonly createdAt: number;
  readonly startedAt: number | null;
  readonly completedAt: number | null;
  readonly upstream: { readonly channelId: string; readonly taskId: string; readonly model: string } | null;
  /** Submission attempts (channels tried). */
  readonly attempts: number;
  readonly progress: number | null;
  readonly result: Readonly<Record<string, unknown>> | null;
  readonly error: TaskError | null;
  readonly units: number;
  readonly unitCount: number | null;
  /** The cost decided when the task succeeded (0 otherwise). */
  readonly charge: bigint;
  readonly resultUrls: readonly string[];
  readonly resultExpiresAt: number | null;
  /** Set when the task's ending carried TaskRun. */
  readonly run: Omit<TaskRun, 'attempts'> | null;
}

export const initialTaskState: TaskState = {
  phase: 'none',
  taskId: '',
  family: 'video',
  accountId: '',
  keyId: null,
  model: '',
  endpoint: '',
  requestId: '',
  holdId: '',
  reserved: 0n,
  billing: { unit: 'call', price: 0n, per: 1, cap: true },
  basis: 0,
  params: {},
  visible: false,
  deadline: 0,
  createdAt: 0,
  startedAt: null,
  completedAt: null,
  upstream: null,
  attempts: 0,
  progress: null,
  result: null,
  error: null,
  units: 0,
  unitCount: null,
  charge: 0n,
  resultUrls: [],
  resultExpiresAt: null,
  run: null,
};

export interface CreateTask extends TaskTerms {
  readonly type: 'CreateTask';
  readonly now: number;
}

export type TaskCommand =
  | CreateTask
  | { type: 'RecordSubmission'; channelId: string; upstreamTaskId: string; upstreamModel: string; attempts: number; now: number }
  | { type: 'RefuseSubmission'; error: TaskError; attempts: number; now: number }
  /** What the upstream says of a task in flight. */
  | { type: 'Observe'; running: boolean; progress: number | null; now: number }
  /** A run of the gateway's own claims its task before its first upstream call: refused once any run has,
   * so that two runs of one task (whatever started them) never both send it upstream. */
  | { type: 'Claim'; now: number }
  | {
      type: 'Succeed';
      result: Record<string, unknown>;
      units: number;
      unitCount: number;
      resultUrls: readonly string[];
      resultExpiresAt: number | null;
      run?: TaskRun;
      now: number;
    }
  | { type: 'Fail'; outcome: Outcome; error: TaskError; result?: Record<string, unknown>; run?: TaskRun; now: number }
  /** The gateway's own deadline: refused before it. */
  | { type: 'Expire'; now: number }
  /** The owner deletes what a finished task made (an avatar): refused while it is in flight. */
  | { type: 'Delete'; now: number };

export type TaskErrorCode = 'task_exists' | 'task_not_found' | 'task_finished' | 'task_not_due' | 'task_submitted' | 'task_in_flight' | 'task_claimed' | 'invalid_task';

/** cost(q) = ceil(q × price / per), never above the reservation when the billing is capped. */
export function costOf(billing: TaskBilling, units: number, reserved: bigint): bigint {
  if (units <= 0) return 0n;
  const product = BigInt(units) * billing.price;
  const per = BigInt(billing.per);
  const cost = (product + per - 1n) / per;
  return billing.cap && cost > reserved ? reserved : cost;
}

/** A task's rules are its family's. */
export const familyOf = (state: TaskState): FamilyRules => FAMILIES[state.family];

export function evolve(state: TaskState, event: TaskEvent): TaskState {
  switch (event.type) {
    case 'TaskCreated': {
      const d = event.data;
      return {
        ...initialTaskState,
        phase: 'created',
        taskId: d.task_id,
        family: d.family,
        accountId: d.account_id,
        keyId: d.key_id,
        model: d.model,
        endpoint: d.endpoint,
        requestId: d.request_id,
        holdId: d.hold_id,
        reserved: d.reserved,
        billing: d.billing,
        basis: d.basis,
        params: d.params,
        visible: d.visible,
        deadline: d.deadline,
        createdAt: d.at,
      };
    }
    case 'TaskSubmitted':
      return {
        ...state,
        phase: 'queued',
        visible: true,
        attempts: event.data.attempts,
        upstream: { channelId: event.data.channel_id, taskId: event.data.upstream_task_id, model: event.data.upstream_model },
      };
    case 'TaskSubmissionRefused':
      return { ...state, phase: 'refused', attempts: event.data.attempts, error: event.data.error, completedAt: event.data.at };
    case 'TaskStarted':
      return { ...state, phase: 'running', startedAt: event.data.at };
    case 'TaskProgressed':
      return { ...state, progress: event.data.progress };
    case 'TaskSucceeded': {
      const d = event.data;
      return {
        ...state,
        phase: 'succeeded',
        result: d.result,
        units: d.units,
        unitCount: d.unit_count,
        charge: d.charge,
        resultUrls: d.result_urls,
        resultExpiresAt: d.result_expires_at,
        completedAt: d.at,
        progress: null,
        ...ranWith(state, d.run),
      };
    }
    case 'TaskFailed':
      return {
        ...state,
        phase: event.data.outcome,
        error: event.data.error,
        result: event.data.result ?? null,
        completedAt: event.data.at,
        progress: null,
        ...ranWith(state, event.data.run),
      };
    case 'TaskDeleted':
      return { ...state, visible: false };
    default:
      return assertNever(event);
  }
}

function ranWith(state: TaskState, run: TaskRunData | undefined): Pick<TaskState, 'attempts' | 'run'> {
  if (!run) return { attempts: state.attempts, run: state.run };
  return { attempts: run.attempts, run: { channelId: run.channel_id, inputTokens: run.input_tokens, outputTokens: run.output_tokens } };
}

const runData = (run: TaskRun | undefined): { run?: TaskRunData } =>
  run ? { run: { attempts: run.attempts, channel_id: run.channelId, input_tokens: run.inputTokens, output_tokens: run.outputTokens } } : {};

type TaskDecision = Decision<TaskEvent, TaskErrorCode>;

function finished(state: TaskState): TaskDecision {
  return refuse('task_finished', `task ${state.taskId} has already ended (${state.phase})`);
}

/** Times are never before the task's creation (updated_at ≥ created_at, as the spec requires). */
const at = (state: TaskState, now: number) => Math.max(state.createdAt, now);

export function decide(command: TaskCommand, state: TaskState): TaskDecision {
  if (command.type === 'CreateTask') {
    if (state.phase !== 'none') return refuse('task_exists', `task ${command.taskId} already exists`);
    if (command.reserved < 0n) return refuse('invalid_task', 'a reservation cannot be negative');
    return accept({
      type: 'TaskCreated',
      data: {
        task_id: command.taskId,
        family: command.family,
        account_id: command.accountId,
        key_id: command.keyId,
        model: command.model,
        endpoint: command.endpoint,
        request_id: command.requestId,
        hold_id: command.holdId,
        reserved: command.reserved,
        billing: command.billing,
        basis: command.basis,
        params: { ...command.params },
        visible: command.visible,
        deadline: command.deadline,
        at: command.now,
      },
    });
  }
  if (state.phase === 'none') return refuse('task_not_found', 'no such task');
  if (command.type === 'Delete') {
    // A task nobody can see (refused at submission, or deleted already) is not there to delete.
    if (!state.visible) return refuse('task_not_found', 'no such task');
    if (isInFlight(state.phase)) return refuse('task_in_flight', `task ${state.taskId} is still in flight`);
    return accept({ type: 'TaskDeleted', data: { at: at(state, command.now) } });
  }
  if (isFinished(state.phase)) {
    // The same upstream acceptance recorded twice (a retried job) is no change.
    if (command.type === 'RecordSubmission' && state.upstream?.taskId === command.upstreamTaskId) return accept();
    return finished(state);
  }
  switch (command.type) {
    case 'RecordSubmission':
      if (state.upstream) {
        if (state.upstream.taskId === command.upstreamTaskId) return accept();
        return refuse('task_submitted', `task ${state.taskId} was already accepted by an upstream`);
      }
      return accept({
        type: 'TaskSubmitted',
        data: { channel_id: command.channelId, upstream_task_id: command.upstreamTaskId, upstream_model: command.upstreamModel, attempts: command.attempts, at: at(state, command.now) },
      });

    case 'RefuseSubmission':
      if (state.upstream) return refuse('task_submitted', `task ${state.taskId} was already accepted by an upstream`);
      return accept({ type: 'TaskSubmissionRefused', data: { error: command.error, attempts: command.attempts, at: at(state, command.now) } });

    case 'Observe': {
      const events: TaskEvent[] = [];
      const when = at(state, command.now);
      if (command.running && state.phase !== 'running') events.push({ type: 'TaskStarted', data: { at: when } });
      const progress = command.progress === null ? null : Math.min(100, Math.max(0, Math.round(command.progress)));
      if (progress !== null && progress !== state.progress) events.push({ type: 'TaskProgressed', data: { progress, at: when } });
      return accept(...events);
    }

    case 'Claim':
      // The claim is the TaskStarted event, appended at the revision this decision read: of two runs
      // deciding at once, the store takes one append and the other, decided again, finds it running.
      if (state.phase !== 'created' || state.upstream) return refuse('task_claimed', `task ${state.taskId} is already being run`);
      return accept({ type: 'TaskStarted', data: { at: at(state, command.now) } });

    case 'Succeed': {
      if (!Number.isSafeInteger(command.units) || command.units < 0) return refuse('invalid_task', 'delivered units must be a non-negative integer');
      return accept({
        type: 'TaskSucceeded',
        data: {
          result: command.result,
          units: command.units,
          unit_count: command.unitCount,
          charge: costOf(state.billing, command.units, state.reserved),
          result_urls: [...command.resultUrls],
          result_expires_at: command.resultExpiresAt,
          ...runData(command.run),
          at: at(state, command.now),
        },
      });
    }

    case 'Fail':
      return accept({
        type: 'TaskFailed',
        data: { outcome: command.outcome, error: command.error, ...(command.result ? { result: command.result } : {}), ...runData(command.run), at: at(state, command.now) },
      });

    case 'Expire':
      if (command.now < state.deadline) return refuse('task_not_due', `task ${state.taskId} runs until ${state.deadline}`);
      return accept({
        type: 'TaskFailed',
        data: {
          outcome: 'expired',
          error: { code: 'task_expired', message: `the task did not finish within its time limit (${state.deadline - state.createdAt} s) and was refunded` },
          at: at(state, command.now),
        },
      });

    default:
      return assertNever(command);
  }
}

export const taskDecider: Decider<TaskCommand, TaskState, TaskEvent, TaskErrorCode> = {
  initialState: initialTaskState,
  evolve,
  decide,
};

export { isInFlight, isFinished };
