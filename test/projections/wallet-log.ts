import fc from 'fast-check';
import { MINIMUM_TOPUP, SIGNUP_GRANT, decide, type WalletCommand } from '../../src/commands/wallet/decider';
import { evolve, initialWalletState, type WalletState } from '../../src/commands/wallet/state';
import type { CallRecord, DomainEvent } from '../../src/events/catalog';
import { START, comparePositions, type EventStore, type Position, type RecordedEvent } from '../../src/events/store/port';
import type { ProjectedEvent } from '../../src/projections/projection';

/** One wallet command, by index: the account, key and hold it names are resolved against
 * what the log holds so far, so that most steps are accepted and some are refused. */
export type WalletStep =
  | { kind: 'topup'; account: number; cents: number }
  | { kind: 'reserve'; account: number; key: number | null; cents: number; capped: boolean }
  | { kind: 'settle'; account: number; hold: number; cents: number; call: boolean }
  | { kind: 'release'; account: number; hold: number; call: boolean }
  | { kind: 'reject'; account: number; key: number | null }
  | { kind: 'deactivate' | 'reactivate'; account: number }
  | { kind: 'limits'; account: number; rpm: number | null; concurrency: number | null };

const account = fc.nat(3);
const key = fc.option(fc.nat(2), { freq: 4 });

export const walletStep: fc.Arbitrary<WalletStep> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('topup' as const), account, cents: fc.nat(5_000) }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('reserve' as const), account, key, cents: fc.nat(3_000), capped: fc.boolean() }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('settle' as const), account, hold: fc.nat(20), cents: fc.nat(4_000), call: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), account, hold: fc.nat(20), call: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reject' as const), account, key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('deactivate' as const, 'reactivate' as const), account }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('limits' as const), account, rpm: fc.option(fc.integer({ min: 1, max: 600 })), concurrency: fc.option(fc.integer({ min: 1, max: 9 })) }),
  },
);

const cents = (n: number) => BigInt(n) * 10_000_000n;

/** Text that a hand-built array literal or a careless escape would break. */
const awkward = ['https://files.example/a,b.png', 'q"uote\\slash', '{brace} NULL', 'ünï cødé', '', 'tab\tline\nreturn\r\\N'];

function callRecord(n: number, keyId: string | null, status: CallRecord['status']): CallRecord {
  return {
    request_id: `req-${n}`,
    key_id: keyId,
    model: n % 3 === 0 ? 'model "quoted", {x}' : 'chat-model',
    endpoint: '/v1/chat/completions',
    status,
    error_code: status === 'success' ? null : 'upstream_error',
    error_message: status === 'success' ? null : `failed ${awkward[n % awkward.length]}`,
    input_tokens: n * 7,
    output_tokens: n * 3,
    cached_tokens: n % 4,
    unit_count: n % 2 ? n : null,
    unit_type: n % 2 ? 'image' : null,
    latency_ms: n % 1000,
    attempts_count: 1 + (n % 3),
    channel_id: n % 2 ? `ch-${n}` : null,
    task_id: n % 5 === 0 ? `task-${n}` : null,
    submitted_at: 1_700_000_000 + n,
    result_urls: awkward.slice(0, n % 4),
    result_expires_at: n % 4 ? 1_800_000_000 + n : null,
  };
}

const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** `n` chat calls on one account: a hold and its settlement each, with a call record. */
export const chatCalls = (n: number, account = 0): WalletStep[] =>
  Array.from({ length: n }, (_, i) => [
    { kind: 'reserve' as const, account, key: 0, cents: 10, capped: false },
    { kind: 'settle' as const, account, hold: i, cents: 7, call: true },
  ]).flat();

export interface WalletLog {
  readonly events: RecordedEvent[];
  readonly items: ProjectedEvent[];
  /** Each account's state after the log, by account id. */
  readonly states: Map<string, WalletState>;
}

/** Runs the steps through the wallet decider, opening an account the first time a step
 * names it, and records the accepted events as a global log that interleaves the accounts. */
export function walletLog(steps: readonly WalletStep[], prefix = 'acct'): WalletLog {
  const states = new Map<string, WalletState>();
  const holds = new Map<string, string[]>();
  const events: RecordedEvent[] = [];
  const items: ProjectedEvent[] = [];
  const revisions = new Map<string, bigint>();
  let now = 1_700_000_000;
  const record = (accountId: string, command: WalletCommand) => {
    const state = states.get(accountId) ?? initialWalletState;
    const decision = decide(command, state);
    if (!decision.ok) return false;
    let next = state;
    for (const event of decision.events) {
      next = evolve(next, event);
      const n = events.length;
      const revision = revisions.get(accountId) ?? 0n;
      revisions.set(accountId, revision + 1n);
      const recorded: RecordedEvent = {
        id: uuid(n + 1),
        streamId: `wallet-${accountId}`,
        revision,
        position: { commit: BigInt(n), prepare: BigInt(n) },
        type: event.type,
        data: event.data,
        metadata: {},
        createdAt: new Date(now * 1000),
      };
      events.push(recorded);
      items.push({ event: event as DomainEvent, recorded });
    }
    states.set(accountId, next);
    return true;
  };

  for (const step of steps) {
    now += 1;
    const accountId = `${prefix}-${step.account}`;
    if (!states.has(accountId)) record(accountId, { type: 'OpenAccount', accountId, name: `account ${step.account}`, trialGrant: SIGNUP_GRANT, now });
    const held = holds.get(accountId) ?? [];
    holds.set(accountId, held);
    const keyId = 'key' in step && step.key !== null ? `${accountId}-key-${step.key}` : null;
    switch (step.kind) {
      case 'topup':
        record(accountId, { type: 'TopUp', topupId: `topup-${now}`, amount: MINIMUM_TOPUP + cents(step.cents), reference: `ref ${now}`, now });
        break;
      case 'reserve': {
        const holdId = `hold-${held.length}`;
        const accepted = record(accountId, {
          type: 'Reserve',
          holdId,
          amount: cents(step.cents),
          keyId,
          spendCap: step.capped ? cents(6_000) : null,
          purpose: 'chat',
          expiresAt: now + 300,
          now,
        });
        if (accepted) held.push(holdId);
        break;
      }
      case 'settle':
      case 'release': {
        if (held.length === 0) break;
        const holdId = held[step.hold % held.length]!;
        const keyOfHold = (states.get(accountId)?.holds.get(holdId)?.keyId ?? null) as string | null;
        const call = step.call ? { call: callRecord(now, keyOfHold, step.kind === 'settle' ? 'success' : 'error') } : {};
        if (step.kind === 'settle') record(accountId, { type: 'Settle', holdId, amount: cents(step.cents), ...call, now });
        else record(accountId, { type: 'Release', holdId, reason: 'upstream failed', ...call, now });
        break;
      }
      case 'reject':
        record(accountId, { type: 'RecordRejectedCall', call: callRecord(now, keyId, 'rejected'), now });
        break;
      case 'deactivate':
        record(accountId, { type: 'Deactivate', reason: 'test', now });
        break;
      case 'reactivate':
        record(accountId, { type: 'Reactivate', now });
        break;
      case 'limits':
        record(accountId, { type: 'SetLimits', rpm: step.rpm, concurrency: step.concurrency, now });
        break;
    }
  }
  return { events, items, states };
}

/** Splits `items` into consecutive batches of the given sizes, repeated as needed. */
export function inBatches<T>(items: readonly T[], sizes: readonly number[]): T[][] {
  const batches: T[][] = [];
  for (let at = 0, i = 0; at < items.length; i++) {
    const size = Math.max(1, sizes.length ? sizes[i % sizes.length]! : items.length);
    batches.push(items.slice(at, at + size));
    at += size;
  }
  return batches;
}

/** An event log held in memory: the runner reads it like the real one, and a test can
 * give it what a real store would never write (a gap in a stream). `push` stamps the
 * events with the next positions and fresh ids. */
export function memoryStore(): EventStore & { readonly events: RecordedEvent[]; push(events: readonly RecordedEvent[]): Position } {
  const events: RecordedEvent[] = [];
  const unsupported = () => Promise.reject(new Error('not supported by the in-memory log'));
  return {
    engine: 'pglite',
    events,
    push(added) {
      for (const e of added) {
        const n = events.length;
        events.push({ ...e, id: uuid(n + 1), position: { commit: BigInt(n), prepare: BigInt(n) } });
      }
      return events.at(-1)?.position ?? START;
    },
    append: unsupported,
    readStream: unsupported,
    async readAll({ after = START, maxCount = Number.MAX_SAFE_INTEGER } = {}) {
      return events.filter((e) => comparePositions(e.position, after) > 0).slice(0, maxCount);
    },
    async headPosition(): Promise<Position> {
      return events.at(-1)?.position ?? START;
    },
    follow() {
      throw new Error('not supported by the in-memory log');
    },
    async close() {},
  };
}
