/**
 * A media task's money, over the task and wallet deciders together (issue: "a task's money ends settled
 * or released exactly once, whatever order polls, retries, restarts and sweeps come in").
 *
 * A sequence of happenings is generated around several tasks of one account: upstream observations
 * (queued, running, progress), endings (succeeded with any delivered quantity, failed, expired,
 * cancelled), the gateway's own expiry at any moment, the step that closes a finished task's hold
 * (TaskService.closeMoney: the pure `closingOf`), repeated or left out (a crash between the ending and
 * the closing), and the hold sweeper at any moment. Each happening is decided and folded exactly as the
 * command handlers do. At the end the recovery runs (what a restart does: expire what is overdue, close
 * what is finished) and the invariants are checked on the events:
 * - every task has ended and its hold was closed exactly once (one HoldSettled or HoldReleased);
 * - a succeeded task's charge is costOf what it delivered (nothing for any other ending);
 * - a settlement is the task's charge, only for a succeeded task, never above a capped reservation;
 * - a task that did not succeed, or delivered nothing, captured nothing; one that delivered something
 *   is released only by the hold sweeper (never refunded by its own closing);
 * - money is conserved: credited = balance + captured, and nothing stays held.
 *
 * FC_RUNS sets the number of sequences (default 10,000).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TaskBilling, TaskEvent, WalletEvent } from '../../events/catalog';
import { SIGNUP_GRANT, decide as decideWallet, type WalletCommand } from '../wallet/decider';
import { evolve as evolveWallet, initialWalletState, type WalletState } from '../wallet/state';
import { costOf, decide as decideTask, evolve as evolveTask, initialTaskState, isFinished, type TaskCommand, type TaskState } from './decider';
import { closingOf, taskCall } from './money';

const RUNS = Number(process.env.FC_RUNS ?? 10_000);
const USD = 1_000_000_000n;
const START = 1_700_000_000;
const TASKS = 3;

type Happening =
  | { kind: 'observe'; task: number; running: boolean; progress: number | null }
  | { kind: 'succeed'; task: number; units: number }
  | { kind: 'fail'; task: number; outcome: 'failed' | 'expired' | 'cancelled' }
  | { kind: 'expire'; task: number }
  | { kind: 'close'; task: number }
  | { kind: 'sweep' }
  | { kind: 'tick'; seconds: number };

const task = fc.integer({ min: 0, max: TASKS - 1 });
const happening: fc.Arbitrary<Happening> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('observe' as const), task, running: fc.boolean(), progress: fc.option(fc.integer({ min: -5, max: 105 })) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('succeed' as const), task, units: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400_000 })) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fail' as const), task, outcome: fc.constantFrom('failed' as const, 'expired' as const, 'cancelled' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), task }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('close' as const), task }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'sweep' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), seconds: fc.integer({ min: 1, max: 4_000 }) }) },
);

const billing: fc.Arbitrary<TaskBilling> = fc.oneof(
  // per second by the millisecond, settled on delivery (may pass the 12 s reservation, as the spec allows)
  fc.record({ unit: fc.constant('millisecond' as const), price: fc.bigInt({ min: 1n, max: USD }), per: fc.constant(1000), cap: fc.boolean() }),
  fc.record({ unit: fc.constant('token' as const), price: fc.bigInt({ min: 1n, max: 10n * USD }), per: fc.constant(1_000_000), cap: fc.boolean() }),
  fc.record({ unit: fc.constantFrom('image' as const, 'call' as const, 'character' as const), price: fc.bigInt({ min: 0n, max: USD / 10n }), per: fc.constantFrom(1, 1000), cap: fc.boolean() }),
);

const scenario = fc.record({
  billings: fc.array(billing, { minLength: TASKS, maxLength: TASKS }),
  reservedUnits: fc.array(fc.integer({ min: 0, max: 200_000 }), { minLength: TASKS, maxLength: TASKS }),
  lifetimes: fc.array(fc.integer({ min: 10, max: 7_200 }), { minLength: TASKS, maxLength: TASKS }),
  happenings: fc.array(happening, { maxLength: 40 }),
});

interface World {
  now: number;
  wallet: WalletState;
  walletEvents: WalletEvent[];
  tasks: TaskState[];
  taskEvents: TaskEvent[][];
}

function runWallet(world: World, command: WalletCommand): boolean {
  const decision = decideWallet(command, world.wallet);
  if (!decision.ok) return false;
  for (const event of decision.events) {
    world.wallet = evolveWallet(world.wallet, event);
    world.walletEvents.push(event);
  }
  return true;
}

function runTask(world: World, index: number, command: TaskCommand): void {
  const decision = decideTask(command, world.tasks[index]!);
  if (!decision.ok) return;
  for (const event of decision.events) {
    world.tasks[index] = evolveTask(world.tasks[index]!, event);
    world.taskEvents[index]!.push(event);
  }
}

/** TaskService.closeMoney, on the pure parts: the wallet refuses a hold that is no longer open. */
function closeMoney(world: World, index: number): void {
  const state = world.tasks[index]!;
  const closing = closingOf(state);
  if (!closing) return;
  const call = taskCall(state);
  runWallet(
    world,
    closing.type === 'Settle'
      ? { type: 'Settle', holdId: state.holdId, amount: closing.amount, call, now: world.now }
      : { type: 'Release', holdId: state.holdId, reason: closing.reason, call, now: world.now },
  );
}

/** The hold sweeper: releases open holds past their deadline. */
function sweep(world: World): void {
  for (const [holdId, hold] of world.wallet.holds) if (hold.expiresAt <= world.now) runWallet(world, { type: 'Release', holdId, reason: 'expired', now: world.now });
}

const HOLD_GRACE_S = 120;

function setUp(billings: TaskBilling[], reservedUnits: number[], lifetimes: number[]): World {
  const world: World = { now: START, wallet: initialWalletState, walletEvents: [], tasks: [], taskEvents: [] };
  runWallet(world, { type: 'OpenAccount', accountId: 'acct', name: 'prop', trialGrant: SIGNUP_GRANT, now: START });
  runWallet(world, { type: 'TopUp', topupId: 't', amount: 100_000_000n * USD, reference: 'r', now: START });
  for (let i = 0; i < TASKS; i++) {
    const b = billings[i]!;
    const reserved = costOf({ ...b, cap: false }, reservedUnits[i]!, 0n);
    const holdId = `hold-${i}`;
    // The gateway's order: the hold first (a refusal is a 402 with no task), then the task.
    const ok = runWallet(world, {
      type: 'Reserve',
      holdId,
      amount: reserved,
      keyId: 'key',
      spendCap: null,
      purpose: 'videos.generations m',
      expiresAt: START + lifetimes[i]! + HOLD_GRACE_S,
      now: START,
    });
    expect(ok).toBe(true);
    world.tasks.push(initialTaskState);
    world.taskEvents.push([]);
    runTask(world, i, {
      type: 'CreateTask',
      taskId: `task-${i}`,
      family: 'video',
      accountId: 'acct',
      keyId: 'key',
      model: 'm',
      endpoint: 'videos.generations',
      requestId: `req-${i}`,
      holdId,
      reserved,
      billing: b,
      basis: reservedUnits[i]!,
      params: {},
      visible: false,
      deadline: START + lifetimes[i]!,
      now: START,
    });
    runTask(world, i, { type: 'RecordSubmission', channelId: 'c', upstreamTaskId: `up-${i}`, upstreamModel: 'm', attempts: 1, now: START });
  }
  return world;
}

function step(world: World, h: Happening): void {
  switch (h.kind) {
    case 'tick':
      world.now += h.seconds;
      return;
    case 'sweep':
      return sweep(world);
    case 'close':
      return closeMoney(world, h.task);
    case 'observe':
      return runTask(world, h.task, { type: 'Observe', running: h.running, progress: h.progress, now: world.now });
    case 'succeed':
      return runTask(world, h.task, { type: 'Succeed', result: {}, units: h.units, unitCount: h.units, resultUrls: [], resultExpiresAt: null, now: world.now });
    case 'fail':
      return runTask(world, h.task, { type: 'Fail', outcome: h.outcome, error: { code: 'x', message: 'x' }, now: world.now });
    case 'expire':
      return runTask(world, h.task, { type: 'Expire', now: world.now });
  }
}

/** A restart: every task past its deadline is expired, every finished task's hold closed (TaskService.finish). */
function recover(world: World): void {
  world.now = Math.max(world.now, ...world.tasks.map((t) => t.deadline));
  for (let i = 0; i < TASKS; i++) {
    runTask(world, i, { type: 'Expire', now: world.now });
    closeMoney(world, i);
  }
}

describe('a media task and its wallet hold', () => {
  it('end with the hold closed exactly once, at the task charge or nothing, money conserved', () => {
    fc.assert(
      fc.property(scenario, ({ billings, reservedUnits, lifetimes, happenings }) => {
        const world = setUp(billings, reservedUnits, lifetimes);
        for (const h of happenings) step(world, h);
        recover(world);

        for (let i = 0; i < TASKS; i++) {
          const state = world.tasks[i]!;
          expect(isFinished(state.phase)).toBe(true);
          // updated_at never before created_at: every ending is at or after the creation.
          expect(state.completedAt!).toBeGreaterThanOrEqual(state.createdAt);
          const closings = world.walletEvents.filter(
            (e): e is Extract<WalletEvent, { type: 'HoldSettled' | 'HoldReleased' }> =>
              (e.type === 'HoldSettled' || e.type === 'HoldReleased') && e.data.hold_id === state.holdId,
          );
          expect(closings).toHaveLength(1);
          const closing = closings[0]!;
          // The charge is the billing's cost of what was delivered, whatever else happened.
          expect(state.charge).toBe(state.phase === 'succeeded' ? costOf(state.billing, state.units, state.reserved) : 0n);
          if (closing.type === 'HoldSettled') {
            expect(state.phase).toBe('succeeded');
            expect(closing.data.captured).toBe(state.charge);
            expect(closing.data.captured).toBeGreaterThan(0n);
            if (state.billing.cap) expect(closing.data.captured).toBeLessThanOrEqual(state.reserved);
            expect(closing.data.call?.task_id).toBe(state.taskId);
          } else {
            // A failure, or nothing delivered: released in full. A task that delivered something is
            // released only by the hold sweeper (its hold expired before anyone closed it: the task is
            // never charged after its hold was given back), never by its own closing.
            expect(closing.data.amount).toBe(state.reserved);
            if (state.phase === 'succeeded' && state.charge > 0n) expect(closing.data.reason).toBe('expired');
          }
        }
        const { wallet } = world;
        expect(wallet.holds.size).toBe(0);
        expect(wallet.held).toBe(0n);
        expect(wallet.credited).toBe(wallet.balance + wallet.captured);
      }),
      { numRuns: RUNS },
    );
  });

  it('charges ceil(units × price / per), within a capped reservation', () => {
    fc.assert(
      fc.property(billing, fc.integer({ min: 0, max: 10_000_000 }), fc.bigInt({ min: 0n, max: 100n * USD }), (b, units, reserved) => {
        const cost = costOf(b, units, reserved);
        const exact = BigInt(units) * b.price;
        const uncapped = units === 0 ? 0n : (exact + BigInt(b.per) - 1n) / BigInt(b.per);
        expect(cost).toBe(b.cap && uncapped > reserved ? reserved : uncapped);
        if (units > 0 && !(b.cap && uncapped > reserved)) {
          expect(cost * BigInt(b.per)).toBeGreaterThanOrEqual(exact);
          expect((cost - 1n) * BigInt(b.per)).toBeLessThan(exact);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
