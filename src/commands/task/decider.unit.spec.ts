import { describe, expect, it } from 'vitest';
import type { TaskBilling, TaskEvent } from '../../events/catalog';
import { givenWhenThen } from '../../../test/support/decider';
import { costOf, initialTaskState, taskDecider, type CreateTask, type TaskCommand, type TaskErrorCode } from './decider';

// given / when / then over the task decider alone: pure, no I/O, no clock.

const { given, fold } = givenWhenThen(taskDecider);

const T0 = 1_700_000_000;
const DEADLINE = T0 + 7_200;
const USD = 1_000_000_000n;
/** 0.10 USD a second, counted by the millisecond: what a per-second video SKU bills. */
const PER_SECOND: TaskBilling = { unit: 'millisecond', price: USD / 10n, per: 1000, cap: false };
const RESERVED = 12n * (USD / 10n);

const create = (over: Partial<CreateTask> = {}): CreateTask => ({
  type: 'CreateTask',
  taskId: 'task-1',
  family: 'video',
  accountId: 'acct',
  keyId: 'key',
  model: 'vid',
  endpoint: 'videos.generations',
  requestId: 'req_1',
  holdId: 'hold-1',
  reserved: RESERVED,
  billing: PER_SECOND,
  basis: 12_000,
  params: { resolution: '720p' },
  visible: false,
  deadline: DEADLINE,
  now: T0,
  ...over,
});

const created = (over: Partial<Extract<TaskEvent, { type: 'TaskCreated' }>['data']> = {}): TaskEvent => ({
  type: 'TaskCreated',
  data: {
    task_id: 'task-1',
    family: 'video',
    account_id: 'acct',
    key_id: 'key',
    model: 'vid',
    endpoint: 'videos.generations',
    request_id: 'req_1',
    hold_id: 'hold-1',
    reserved: RESERVED,
    billing: PER_SECOND,
    basis: 12_000,
    params: { resolution: '720p' },
    visible: false,
    deadline: DEADLINE,
    at: T0,
    ...over,
  },
});

const record = (upstreamTaskId = 'up-1', now = T0 + 1): TaskCommand => ({ type: 'RecordSubmission', channelId: 'ch-a', upstreamTaskId, upstreamModel: 'vid-up', attempts: 2, now });
const submitted = (at = T0 + 1): TaskEvent => ({ type: 'TaskSubmitted', data: { channel_id: 'ch-a', upstream_task_id: 'up-1', upstream_model: 'vid-up', attempts: 2, at } });
const started = (at = T0 + 2): TaskEvent => ({ type: 'TaskStarted', data: { at } });
const progressed = (progress: number, at = T0 + 2): TaskEvent => ({ type: 'TaskProgressed', data: { progress, at } });
const observe = (running: boolean, progress: number | null, now = T0 + 2): TaskCommand => ({ type: 'Observe', running, progress, now });
const succeed = (units: number, now = T0 + 60): TaskCommand => ({
  type: 'Succeed',
  result: { duration: units / 1000 },
  units,
  unitCount: Math.round(units / 1000),
  resultUrls: ['https://cdn.example/v.mp4'],
  resultExpiresAt: now + 86_400,
  now,
});
const succeeded = (units: number, charge: bigint, at = T0 + 60): TaskEvent => ({
  type: 'TaskSucceeded',
  data: {
    result: { duration: units / 1000 },
    units,
    unit_count: Math.round(units / 1000),
    charge,
    result_urls: ['https://cdn.example/v.mp4'],
    result_expires_at: at + 86_400,
    at,
  },
});
const fail = (outcome: 'failed' | 'expired' | 'cancelled' = 'failed', now = T0 + 30): TaskCommand => ({ type: 'Fail', outcome, error: { code: 'boom', message: 'it broke' }, now });
const failed = (outcome: 'failed' | 'expired' | 'cancelled' = 'failed', at = T0 + 30): TaskEvent => ({ type: 'TaskFailed', data: { outcome, error: { code: 'boom', message: 'it broke' }, at } });
const expire = (now: number): TaskCommand => ({ type: 'Expire', now });
const expired = (at: number): TaskEvent => ({
  type: 'TaskFailed',
  data: { outcome: 'expired', error: { code: 'task_expired', message: 'the task did not finish within its time limit (7200 s) and was refunded' }, at },
});

const IN_FLIGHT: Record<string, TaskEvent[]> = {
  created: [created()],
  queued: [created(), submitted()],
  running: [created(), submitted(), started()],
};
const ENDED: Record<string, TaskEvent[]> = {
  succeeded: [created(), submitted(), succeeded(5_000, 500_000_000n)],
  failed: [created(), submitted(), failed('failed')],
  expired: [created(), submitted(), expired(DEADLINE)],
  cancelled: [created(), submitted(), failed('cancelled')],
  refused: [created(), { type: 'TaskSubmissionRefused', data: { error: { code: 'upstream_error', message: 'no' }, attempts: 3, at: T0 + 1 } }],
};

describe('CreateTask', () => {
  it('creates the task with its billing, hold and deadline, visible as asked', () => {
    const state = given().when(create()).then([created()]);
    expect(state).toMatchObject({ phase: 'created', taskId: 'task-1', holdId: 'hold-1', reserved: RESERVED, deadline: DEADLINE, createdAt: T0, visible: false, upstream: null, charge: 0n });
    given().when(create({ visible: true, family: 'image' })).then([created({ visible: true, family: 'image' })]);
  });

  it('copies the params: a caller changing its object later does not change the event', () => {
    const params: Record<string, unknown> = { seed: 1 };
    const decision = taskDecider.decide(create({ params }), initialTaskState);
    params.seed = 2;
    expect(decision).toMatchObject({ ok: true, events: [{ data: { params: { seed: 1 } } }] });
  });

  it('is refused for a task that exists (task_exists), whatever its phase', () => {
    for (const events of [...Object.values(IN_FLIGHT), ...Object.values(ENDED)]) given(events).when(create()).thenRefused('task_exists', 'task-1');
  });

  it('is refused with a negative reservation (invalid_task)', () => {
    given().when(create({ reserved: -1n })).thenRefused('invalid_task', /negative/);
  });
});

describe('a command on a task that does not exist', () => {
  it.each<[string, TaskCommand]>([
    ['RecordSubmission', record()],
    ['RefuseSubmission', { type: 'RefuseSubmission', error: { code: 'x', message: 'x' }, attempts: 1, now: T0 }],
    ['Observe', observe(true, 10)],
    ['Succeed', succeed(1000)],
    ['Fail', fail()],
    ['Expire', expire(DEADLINE + 1)],
  ])('%s is refused (task_not_found)', (_name, command) => {
    given().when(command).thenRefused('task_not_found');
  });
});

describe('RecordSubmission', () => {
  it('makes the task queued and visible, with where to ask about it', () => {
    const state = given([created()]).when(record()).then([submitted()]);
    expect(state).toMatchObject({ phase: 'queued', visible: true, attempts: 2, upstream: { channelId: 'ch-a', taskId: 'up-1', model: 'vid-up' } });
  });

  it('is idempotent: the same upstream task recorded again is no change, in flight or after the end', () => {
    for (const events of [IN_FLIGHT.queued!, IN_FLIGHT.running!, ENDED.succeeded!, ENDED.failed!, ENDED.expired!]) given(events).when(record('up-1', T0 + 99)).then([]);
  });

  it('refuses another upstream task once one accepted it (task_submitted), and after the end (task_finished)', () => {
    given(IN_FLIGHT.queued!).when(record('up-2')).thenRefused('task_submitted', /already accepted/);
    given(IN_FLIGHT.running!).when(record('up-2')).thenRefused('task_submitted');
    given(ENDED.succeeded!).when(record('up-2')).thenRefused('task_finished', /already ended \(succeeded\)/);
    given(ENDED.refused!).when(record('up-2')).thenRefused('task_finished', /refused/);
  });
});

describe('RefuseSubmission', () => {
  it('ends a task no upstream accepted: refused, never visible, ended at the refusal', () => {
    const state = given([created()]).when({ type: 'RefuseSubmission', error: { code: 'upstream_error', message: 'no' }, attempts: 3, now: T0 + 1 }).then([ENDED.refused![1]!]);
    expect(state).toMatchObject({ phase: 'refused', visible: false, attempts: 3, completedAt: T0 + 1, error: { code: 'upstream_error' } });
  });

  it('is refused once an upstream accepted the task (task_submitted)', () => {
    given(IN_FLIGHT.queued!).when({ type: 'RefuseSubmission', error: { code: 'x', message: 'x' }, attempts: 1, now: T0 + 2 }).thenRefused('task_submitted');
  });
});

describe('Claim', () => {
  const claim = (now = T0 + 2): TaskCommand => ({ type: 'Claim', now });
  const gatewayTask = [created({ visible: true, family: 'image' })];

  it('starts a task the gateway runs itself, once: a second claim is refused, so a second run never calls the upstream', () => {
    const state = given(gatewayTask).when(claim()).then([started()]);
    expect(state.phase).toBe('running');
    given([...gatewayTask, started()]).when(claim(T0 + 3)).thenRefused('task_claimed', /already being run/);
  });

  it('is refused for an upstream task (its poller observes it) and for a task that has ended', () => {
    given(IN_FLIGHT.queued!).when(claim()).thenRefused('task_claimed');
    given(IN_FLIGHT.running!).when(claim()).thenRefused('task_claimed');
    for (const events of Object.values(ENDED)) given(events).when(claim()).thenRefused('task_finished');
  });
});

describe('Observe', () => {
  it('records the start and progress only when they change', () => {
    given(IN_FLIGHT.queued!).when(observe(false, null)).then([]);
    const running = given(IN_FLIGHT.queued!).when(observe(true, null)).then([started()]);
    expect(running.phase).toBe('running');
    given(IN_FLIGHT.running!).when(observe(true, null)).then([]);
    given(IN_FLIGHT.queued!).when(observe(true, 40)).then([started(), progressed(40)]);
    given([...IN_FLIGHT.running!, progressed(40)]).when(observe(true, 40)).then([]);
    given([...IN_FLIGHT.running!, progressed(40)]).when(observe(true, 41)).then([progressed(41)]);
    // A queued report after the start does not move the task back.
    given(IN_FLIGHT.running!).when(observe(false, null)).then([]);
  });

  it('clamps progress to 0-100 and rounds it', () => {
    given(IN_FLIGHT.running!).when(observe(true, 140)).then([progressed(100)]);
    given(IN_FLIGHT.running!).when(observe(true, -3)).then([progressed(0)]);
    given(IN_FLIGHT.running!).when(observe(true, 33.6)).then([progressed(34)]);
    // 140 and 100 are the same progress once clamped: no second event.
    given([...IN_FLIGHT.running!, progressed(100)]).when(observe(true, 140)).then([]);
  });

  it('starts a task the gateway runs itself straight from created (it has no upstream submission)', () => {
    given([created({ family: 'image', visible: true })]).when(observe(true, null)).then([started()]);
  });
});

describe('Succeed', () => {
  it('charges costOf the delivered units: ceil(units × price / per)', () => {
    // 4.2 s at 0.10 USD/s = 0.42 USD; 1 ms = 0.0001 USD.
    given(IN_FLIGHT.running!).when(succeed(4_200)).then([succeeded(4_200, 420_000_000n)]);
    const state = given(IN_FLIGHT.running!).when(succeed(1)).then([succeeded(1, 100_000n)]);
    expect(state).toMatchObject({ phase: 'succeeded', charge: 100_000n, units: 1, progress: null, resultUrls: ['https://cdn.example/v.mp4'] });
    // Rounded up to the nano-dollar: 7 tokens at 2 USD per million.
    const tokens: TaskBilling = { unit: 'token', price: 2n * USD, per: 1_000_000, cap: true };
    const byToken = fold([created({ billing: tokens }), submitted()]);
    expect(taskDecider.decide(succeed(7), byToken)).toMatchObject({ ok: true, events: [{ data: { charge: 14_000n } }] });
  });

  it('passes the reservation without a cap (the spec: settled on the actual length), never with one', () => {
    // 20 s delivered against a 12 s reservation.
    given(IN_FLIGHT.running!).when(succeed(20_000)).then([succeeded(20_000, 2n * USD)]);
    const capped = [created({ billing: { ...PER_SECOND, cap: true } }), submitted()];
    given(capped).when(succeed(20_000)).then([succeeded(20_000, RESERVED)]);
    given(capped).when(succeed(5_000)).then([succeeded(5_000, 500_000_000n)]);
    expect(costOf({ ...PER_SECOND, cap: true }, 20_000, RESERVED)).toBe(RESERVED);
    expect(costOf(PER_SECOND, 20_000, RESERVED)).toBe(2n * USD);
  });

  it('charges nothing for nothing delivered', () => {
    given(IN_FLIGHT.queued!).when(succeed(0)).then([succeeded(0, 0n)]);
  });

  it('refuses units that are not a non-negative integer (invalid_task)', () => {
    for (const units of [-1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 2]) given(IN_FLIGHT.running!).when(succeed(units)).thenRefused('invalid_task');
  });
});

describe('Fail and Expire', () => {
  it.each(['failed', 'expired', 'cancelled'] as const)('Fail ends the task %s, with its error', (outcome) => {
    const state = given(IN_FLIGHT.running!).when(fail(outcome)).then([failed(outcome)]);
    expect(state).toMatchObject({ phase: outcome, error: { code: 'boom' }, completedAt: T0 + 30, progress: null, charge: 0n });
  });

  it('Fail keeps the result a family must still answer with', () => {
    const command: TaskCommand = { type: 'Fail', outcome: 'failed', error: { code: 'upstream_error', message: 'no' }, result: { status: 400 }, now: T0 + 3 };
    const state = given(IN_FLIGHT.created!).when(command).then([{ type: 'TaskFailed', data: { outcome: 'failed', error: { code: 'upstream_error', message: 'no' }, result: { status: 400 }, at: T0 + 3 } }]);
    expect(state.result).toEqual({ status: 400 });
  });

  it('Expire is refused before the deadline (task_not_due), and ends the task expired from it on', () => {
    given(IN_FLIGHT.running!).when(expire(DEADLINE - 1)).thenRefused('task_not_due', String(DEADLINE));
    given(IN_FLIGHT.running!).when(expire(DEADLINE)).then([expired(DEADLINE)]);
    given(IN_FLIGHT.created!).when(expire(DEADLINE + 50)).then([expired(DEADLINE + 50)]);
  });
});

describe('a finished task', () => {
  const commands: Array<[string, TaskCommand]> = [
    ['RefuseSubmission', { type: 'RefuseSubmission', error: { code: 'x', message: 'x' }, attempts: 1, now: T0 + 100 }],
    ['Observe', observe(true, 50, T0 + 100)],
    ['Succeed', succeed(1_000, T0 + 100)],
    ['Fail', fail('failed', T0 + 100)],
    ['Expire', expire(DEADLINE + 100)],
  ];
  for (const [phase, events] of Object.entries(ENDED))
    it.each(commands)(`(${phase}) refuses %s (task_finished)`, (_name, command) => {
      given(events).when(command).thenRefused('task_finished' satisfies TaskErrorCode, `(${phase})`);
    });
});

describe('times', () => {
  it('are never before the creation: a clock behind it records the creation time', () => {
    const early = T0 - 5;
    given([created()]).when(record('up-1', early)).then([submitted(T0)]);
    given(IN_FLIGHT.queued!).when(observe(true, 10, early)).then([started(T0), progressed(10, T0)]);
    const late = succeeded(1_000, 100_000_000n, T0) as Extract<TaskEvent, { type: 'TaskSucceeded' }>;
    given(IN_FLIGHT.running!).when(succeed(1_000, early)).then([{ ...late, data: { ...late.data, result_expires_at: early + 86_400 } }]);
    given(IN_FLIGHT.running!).when(fail('failed', early)).then([failed('failed', T0)]);
    given([created()]).when({ type: 'RefuseSubmission', error: { code: 'x', message: 'x' }, attempts: 0, now: early }).then([
      { type: 'TaskSubmissionRefused', data: { error: { code: 'x', message: 'x' }, attempts: 0, at: T0 } },
    ]);
  });
});

describe('Delete (what a finished task made: an avatar)', () => {
  const deleted = (at: number): TaskEvent => ({ type: 'TaskDeleted', data: { at } });
  const visible = (events: TaskEvent[]): TaskEvent[] => [created({ visible: true }), ...events.slice(1)];

  it('hides a finished, visible task; its money and phase stay as they were', () => {
    for (const name of ['succeeded', 'failed', 'expired', 'cancelled']) {
      const state = given(visible(ENDED[name]!)).when({ type: 'Delete', now: T0 + 100 }).then([deleted(T0 + 100)]);
      expect(state).toMatchObject({ visible: false, phase: name });
    }
  });

  it('is refused while the task is in flight (task_in_flight)', () => {
    for (const events of [visible(IN_FLIGHT.queued!), visible(IN_FLIGHT.running!)]) given(events).when({ type: 'Delete', now: T0 + 5 }).thenRefused('task_in_flight');
  });

  it('is refused for a task nobody sees: unknown, refused at submission, or deleted already (task_not_found)', () => {
    given().when({ type: 'Delete', now: T0 }).thenRefused('task_not_found');
    given(ENDED.refused!).when({ type: 'Delete', now: T0 + 5 }).thenRefused('task_not_found');
    given([...visible(ENDED.succeeded!), deleted(T0 + 70)]).when({ type: 'Delete', now: T0 + 80 }).thenRefused('task_not_found');
  });

  it('times the deletion no earlier than the creation', () => {
    given(visible(ENDED.failed!)).when({ type: 'Delete', now: T0 - 50 }).then([deleted(T0)]);
  });
});
