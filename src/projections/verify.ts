import { UnreadableEventError, decodeRecorded, type KeyEvent, type TaskEvent, type WalletEvent } from '../events/catalog';
import type { EventStore } from '../events/store/port';
import { START } from '../events/store/port';
import { evolve as evolveKey, initialKeyState, type KeyState } from '../commands/key/decider';
import { evolve as evolveWallet, initialWalletState, type WalletState } from '../commands/wallet/state';
import type { Sql } from '../storage/sql';
import { TaskCheck } from './tasks/verify';

export interface Difference {
  readonly subject: string;
  readonly field: string;
  readonly expected: string;
  readonly actual: string;
}

/** Folds every wallet, key and task stream from the log and compares the result with the
 * read models (task views: src/projections/tasks/verify.ts). An empty list means the projections say exactly what the events say.
 * A stream with an event the projections parked (or that the catalog cannot decode) is folded
 * up to that event, as the projections keep it, and the parked event is itself a difference. */
export async function verifyLedger(store: EventStore, sql: Sql, options: { accountId?: string } = {}): Promise<Difference[]> {
  const differences: Difference[] = [];
  const wallets = new Map<string, WalletState>();
  const walletEvents = new Map<string, number>();
  const keys = new Map<string, KeyState>();
  const tasks = new TaskCheck();
  const { cut, tasksCut } = await parkedStreams(sql, differences, options.accountId);
  const stopped = new Set<string>();
  for (let after = START; ; ) {
    const batch = await store.readAll({ after, maxCount: 1000 });
    if (batch.length === 0) break;
    for (const recorded of batch) {
      after = recorded.position;
      const wallet = recorded.streamId.startsWith('wallet-');
      const task = recorded.streamId.startsWith('task-');
      if (!wallet && !task && !recorded.streamId.startsWith('key-')) continue;
      if (wallet && options.accountId && recorded.streamId !== `wallet-${options.accountId}`) continue;
      const from = (task ? tasksCut : cut).get(recorded.streamId);
      if (stopped.has(recorded.streamId) || (from !== undefined && recorded.revision >= from)) continue;
      let event;
      try {
        event = decodeRecorded(recorded);
      } catch (error) {
        if (!(error instanceof UnreadableEventError)) throw error;
        stopped.add(recorded.streamId);
        differences.push({ subject: `stream ${recorded.streamId}`, field: `event ${recorded.revision} (${recorded.type})`, expected: 'decodable', actual: error.reason });
        continue;
      }
      if (task) {
        tasks.taskEvent(recorded.streamId, event as TaskEvent);
      } else if (wallet) {
        const id = recorded.streamId.slice('wallet-'.length);
        wallets.set(id, evolveWallet(wallets.get(id) ?? initialWalletState, event as WalletEvent));
        // The task views follow wallets too: a wallet they parked is compared up to that event.
        const tasksFrom = tasksCut.get(recorded.streamId);
        if (tasksFrom === undefined || recorded.revision < tasksFrom) tasks.walletEvent(id, event as WalletEvent);
        if (['CreditGranted', 'WalletToppedUp', 'FundsReserved', 'HoldSettled', 'HoldReleased', 'WalletAdjusted', 'WalletDebited'].includes(event.type))
          walletEvents.set(id, (walletEvents.get(id) ?? 0) + 1);
      } else {
        const id = recorded.streamId.slice('key-'.length);
        keys.set(id, evolveKey(keys.get(id) ?? initialKeyState, event as KeyEvent));
      }
    }
  }

  const compare = (subject: string, field: string, expected: unknown, actual: unknown) => {
    const e = expected === undefined ? 'null' : JSON.stringify(expected, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    const a = actual === undefined ? 'null' : JSON.stringify(actual, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    if (e !== a) differences.push({ subject, field, expected: e, actual: a });
  };
  const big = (v: string | null | undefined) => (v == null ? null : BigInt(v));

  const accountRows = await sql.query<Record<string, string | null>>(
    `SELECT account_id, name, status, balance::text, held::text, credited::text, captured::text, adjusted::text, debited::text, rpm, concurrency, channel_group FROM accounts
      WHERE $1::text IS NULL OR account_id = $1`,
    [options.accountId ?? null],
  );
  const rowsById = new Map(accountRows.map((r) => [r.account_id!, r]));
  for (const [id, state] of wallets) {
    const subject = `account ${id}`;
    const row = rowsById.get(id);
    rowsById.delete(id);
    if (!row) {
      differences.push({ subject, field: 'row', expected: 'present', actual: 'missing' });
      continue;
    }
    compare(subject, 'name', state.name, row.name);
    compare(subject, 'status', state.status, row.status);
    compare(subject, 'balance', state.balance, big(row.balance));
    compare(subject, 'held', state.held, big(row.held));
    compare(subject, 'credited', state.credited, big(row.credited));
    compare(subject, 'captured', state.captured, big(row.captured));
    compare(subject, 'adjusted', state.adjusted, big(row.adjusted));
    compare(subject, 'debited', state.debited, big(row.debited));
    compare(subject, 'rpm', state.limits.rpm, row.rpm === null ? null : Number(row.rpm));
    compare(subject, 'concurrency', state.limits.concurrency, row.concurrency === null ? null : Number(row.concurrency));
    compare(subject, 'group', state.group, row.channel_group);
    // Money is conserved: credits = balance + captured charges + net adjustments + the provider's debits.
    const kept = state.balance + state.captured + state.adjusted + state.debited;
    if (state.credited !== kept) differences.push({ subject, field: 'conservation', expected: String(state.credited), actual: String(kept) });

    const open = await sql.query<{ hold_id: string; amount: string }>(
      `SELECT hold_id, amount::text FROM holds WHERE account_id = $1 AND status = 'open' ORDER BY hold_id`,
      [id],
    );
    compare(
      subject,
      'open holds',
      [...state.holds.entries()].map(([h, v]) => [h, v.amount]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      open.map((r) => [r.hold_id, BigInt(r.amount)]),
    );
    const spend = await sql.query<{ key_id: string; spent: string; held: string }>(
      'SELECT key_id, spent::text, held::text FROM key_spend WHERE account_id = $1 ORDER BY key_id',
      [id],
    );
    compare(
      subject,
      'key spend',
      [...state.keys.entries()].map(([k, u]) => [k, u.spent, u.held]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      spend.map((r) => [r.key_id, BigInt(r.spent), BigInt(r.held)]),
    );
    const [ledger] = await sql.query<{ n: string; balance_after: string | null; held_after: string | null }>(
      `SELECT (SELECT count(*) FROM ledger_entries WHERE account_id = $1)::text AS n,
              l.balance_after::text AS balance_after, l.held_after::text AS held_after
         FROM (SELECT 1) one
         LEFT JOIN LATERAL (SELECT balance_after, held_after FROM ledger_entries WHERE account_id = $1 ORDER BY seq DESC LIMIT 1) l ON true`,
      [id],
    );
    compare(subject, 'ledger entries', walletEvents.get(id) ?? 0, Number(ledger?.n ?? 0));
    compare(subject, 'ledger balance', state.balance, big(ledger?.balance_after) ?? 0n);
    compare(subject, 'ledger held', state.held, big(ledger?.held_after) ?? 0n);
  }
  for (const id of rowsById.keys()) differences.push({ subject: `account ${id}`, field: 'row', expected: 'absent (no events)', actual: 'present' });

  const keyRows = await sql.query<Record<string, unknown>>(
    `SELECT key_id, account_id, name, prefix, key_hash, allowed_models, expires_at::text AS expires_at, enabled, spend_cap::text AS spend_cap, status, revealable, channel_group
       FROM api_keys WHERE $1::text IS NULL OR account_id = $1`,
    [options.accountId ?? null],
  );
  const keyRowsById = new Map(keyRows.map((r) => [String(r.key_id), r]));
  for (const [id, state] of keys) {
    if (options.accountId && state.accountId !== options.accountId) continue;
    const subject = `key ${id}`;
    const row = keyRowsById.get(id);
    keyRowsById.delete(id);
    if (!row) {
      differences.push({ subject, field: 'row', expected: 'present', actual: 'missing' });
      continue;
    }
    compare(subject, 'account', state.accountId, row.account_id);
    compare(subject, 'name', state.settings.name, row.name);
    compare(subject, 'prefix', state.prefix, row.prefix);
    compare(subject, 'hash', state.hash, row.key_hash);
    compare(subject, 'allowed_models', state.settings.allowed_models, row.allowed_models);
    compare(subject, 'expires_at', state.settings.expires_at, row.expires_at === null ? null : Number(row.expires_at));
    compare(subject, 'enabled', state.settings.enabled, row.enabled);
    compare(subject, 'spend_cap', state.settings.spend_cap, big(row.spend_cap as string | null));
    compare(subject, 'group', state.settings.group, row.channel_group);
    compare(subject, 'status', state.status, row.status);
    compare(subject, 'revealable', state.revealable, row.revealable);
  }
  for (const id of keyRowsById.keys()) differences.push({ subject: `key ${id}`, field: 'row', expected: 'absent (no events)', actual: 'present' });

  await tasks.compare(sql, {
    compare,
    report: (subject, field, expected, actual) => differences.push({ subject, field, expected, actual }),
    openHold: (accountId, holdId) => wallets.get(accountId)?.holds.has(holdId) ?? false,
    accountId: options.accountId,
  });
  return differences;
}

/** The read models verify compares: a stream parked by one of them is compared up to the event parked.
 * The task views are cut apart (`tasksCut`): a wallet they parked is still whole in the accounts. */
const COMPARED = ['accounts', 'ledger', 'keys'];

/** Where each stream parked by a compared projection stops (its first parked revision); each parked
 * stream is a difference, whatever the projection (see `gateway ledger verify --parked`). */
async function parkedStreams(sql: Sql, differences: Difference[], accountId: string | undefined): Promise<{ cut: Map<string, bigint>; tasksCut: Map<string, bigint> }> {
  const rows = await sql.query<{ projection: string; stream_id: string; revision: string; event_type: string; error: string; n: number }>(
    `SELECT DISTINCT ON (projection, stream_id) projection, stream_id, revision::text AS revision, event_type, error,
            (count(*) OVER (PARTITION BY projection, stream_id))::int AS n
       FROM projection_parked_events ORDER BY projection, stream_id, revision`,
  );
  const cut = new Map<string, bigint>();
  const tasksCut = new Map<string, bigint>();
  for (const row of rows) {
    const revision = BigInt(row.revision);
    // Rows come first revision first, one per projection and stream.
    if (row.projection === 'tasks') tasksCut.set(row.stream_id, revision);
    if (accountId !== undefined && row.stream_id !== `wallet-${accountId}`) continue;
    differences.push({
      subject: `stream ${row.stream_id}`,
      field: `parked by ${row.projection}`,
      expected: 'every event applied',
      actual: `${row.n} event(s) parked from revision ${revision} (${row.event_type}: ${row.error})`,
    });
    if (!COMPARED.includes(row.projection)) continue;
    const before = cut.get(row.stream_id);
    if (before === undefined || revision < before) cut.set(row.stream_id, revision);
  }
  return { cut, tasksCut };
}
