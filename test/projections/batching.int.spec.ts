import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsProjection } from '../../src/projections/accounts/projection';
import { callLogProjection } from '../../src/projections/call-log/projection';
import { ledgerProjection } from '../../src/projections/ledger/projection';
import { LOAD, RebuildMemory, WHOLE, type BatchWrites, type ProjectedEvent } from '../../src/projections/projection';
import { testDatabase, type TestDatabase } from '../support/storage';
import type { CallRecord } from '../../src/events/catalog';
import { inBatches, walletLog, walletStep, type WalletStep } from './wallet-log';

const projections = [accountsProjection, ledgerProjection, callLogProjection];

const TABLES: Record<string, string> = {
  accounts: 'SELECT * FROM accounts ORDER BY account_id',
  holds: 'SELECT * FROM holds ORDER BY account_id, hold_id',
  key_spend: 'SELECT * FROM key_spend ORDER BY key_id',
  ledger_entries: 'SELECT * FROM ledger_entries ORDER BY account_id, seq',
  call_log: 'SELECT * FROM call_log ORDER BY id',
};

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
  for (const p of projections) await db.sql.exec(p.schema);
});
afterAll(() => db.drop());

/** Empties the tables, applies the log in the given batches (one transaction each, as the
 * runner does, each table written `writes.rowsPerStatement` rows a statement), and returns every row.
 * `LOAD` writes as a rebuild does: COPY, and each projection's memory carried from batch to batch. */
async function project(items: readonly ProjectedEvent[], sizes: readonly number[], writes: BatchWrites = WHOLE) {
  for (const p of projections) for (const table of p.tables) await db.sql.query(`DELETE FROM ${table}`);
  const memory = new Map(projections.map((p) => [p, writes === LOAD ? new RebuildMemory() : undefined]));
  for (const batch of inBatches(items, sizes))
    await db.sql.transaction(async (tx) => {
      for (const p of projections) await p.applyBatch(tx, batch, writes, memory.get(p));
    });
  const rows: Record<string, Record<string, unknown>[]> = {};
  for (const [name, query] of Object.entries(TABLES)) rows[name] = await db.sql.query(query);
  return rows;
}

type Rows = Awaited<ReturnType<typeof project>>;

/** bigint columns come back as strings from pg and as numbers from PGlite. */
const big = (v: unknown) => (v === null || v === undefined ? null : BigInt(v as string | number));

/** The rows say what folding each wallet's events says. */
function expectMatchesDecider(rows: Rows, log: ReturnType<typeof walletLog>) {
  for (const [accountId, state] of log.states) {
    const account = rows.accounts!.find((r) => r.account_id === accountId)!;
    expect({ balance: big(account.balance), held: big(account.held), credited: big(account.credited), captured: big(account.captured), status: account.status }).toEqual({
      balance: state.balance,
      held: state.held,
      credited: state.credited,
      captured: state.captured,
      status: state.status,
    });
    const spend = rows.key_spend!.filter((r) => r.account_id === accountId).map((r) => [r.key_id, big(r.spent), big(r.held)]);
    expect(spend).toEqual([...state.keys.entries()].map(([k, u]) => [k, u.spent, u.held]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
    const last = rows.ledger_entries!.filter((r) => r.account_id === accountId).at(-1);
    expect([big(last?.balance_after) ?? 0n, big(last?.held_after) ?? 0n]).toEqual([state.balance, state.held]);
  }
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** Every call-log row is its event's call record, field for field (awkward text included). */
function expectCallRows(rows: Rows, log: ReturnType<typeof walletLog>) {
  const records = log.items.flatMap(({ event, recorded }) => {
    const call = (event.data as { call?: CallRecord }).call;
    return call ? [{ id: recorded.id, call }] : [];
  });
  expect(rows.call_log!.length).toBe(records.length);
  for (const { id, call } of records) {
    const row = rows.call_log!.find((r) => r.id === id)!;
    expect({
      request_id: row.request_id,
      key_id: row.key_id,
      model: row.model,
      endpoint: row.endpoint,
      status: row.status,
      error_code: row.error_code,
      error_message: row.error_message,
      input_tokens: num(row.input_tokens),
      output_tokens: num(row.output_tokens),
      cached_tokens: num(row.cached_tokens),
      unit_count: num(row.unit_count),
      unit_type: row.unit_type,
      latency_ms: num(row.latency_ms),
      attempts_count: num(row.attempts_count),
      channel_id: row.channel_id,
      task_id: row.task_id,
      submitted_at: num(row.submitted_at),
      result_urls: row.result_urls,
      result_expires_at: num(row.result_expires_at),
    }).toEqual(call);
  }
}

describe('hot projections in batches', () => {
  it('write the same rows whether a log comes in one batch, one event at a time or in batches of random sizes, in statements of any number of rows', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(walletStep, { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 5 }),
        async (steps, sizes, rowsPerStatement) => {
          const log = walletLog(steps);
          const oneAtATime = await project(log.items, [1]);
          expectMatchesDecider(oneAtATime, log);
          expectCallRows(oneAtATime, log);
          expect(await project(log.items, [log.items.length])).toEqual(oneAtATime);
          expect(await project(log.items, sizes)).toEqual(oneAtATime);
          expect(await project(log.items, [log.items.length], { rowsPerStatement })).toEqual(oneAtATime);
          expect(await project(log.items, sizes, { rowsPerStatement })).toEqual(oneAtATime);
          // As a rebuild loads them.
          expect(await project(log.items, sizes, LOAD)).toEqual(oneAtATime);
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 15), seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined },
    );
  });

  it('handle holds reserved and closed in the same batch or across batches, accounts interleaved', async () => {
    const steps: WalletStep[] = [
      { kind: 'reserve', account: 0, key: 0, cents: 500, capped: false },
      { kind: 'reserve', account: 1, key: 0, cents: 700, capped: true },
      { kind: 'settle', account: 0, hold: 0, cents: 300, call: true },
      { kind: 'reserve', account: 0, key: null, cents: 100, capped: false },
      { kind: 'reject', account: 1, key: 0 },
      { kind: 'limits', account: 1, rpm: 60, concurrency: null },
      { kind: 'reserve', account: 0, key: 1, cents: 0, capped: false },
      { kind: 'settle', account: 0, hold: 2, cents: 0, call: false },
      { kind: 'release', account: 1, hold: 0, call: true },
      { kind: 'deactivate', account: 1 },
      { kind: 'settle', account: 0, hold: 1, cents: 900, call: true },
      { kind: 'topup', account: 1, cents: 100 },
    ];
    const log = walletLog(steps);
    expect(log.items.map((i) => i.event.type)).toContain('CallRejected');
    const oneAtATime = await project(log.items, [1]);
    expectMatchesDecider(oneAtATime, log);
    for (const sizes of [[log.items.length], [2], [3, 1], [5, 7]]) {
      expect(await project(log.items, sizes)).toEqual(oneAtATime);
      expect(await project(log.items, sizes, LOAD)).toEqual(oneAtATime);
    }
    expect(oneAtATime.holds!.map((h) => [h.account_id, h.hold_id, h.key_id, h.status, big(h.captured)])).toEqual([
      ['acct-0', 'hold-0', 'acct-0-key-0', 'settled', 3_000_000_000n],
      ['acct-0', 'hold-1', null, 'settled', 9_000_000_000n],
      ['acct-0', 'hold-2', 'acct-0-key-1', 'settled', 0n],
      ['acct-1', 'hold-0', 'acct-1-key-0', 'released', 0n],
    ]);
    // A capture or release carries its hold's key, whichever batch reserved the hold.
    expect(oneAtATime.ledger_entries!.filter((e) => e.entry_type !== 'grant').map((e) => [e.account_id, e.entry_type, e.hold_id, e.key_id])).toEqual([
      ['acct-0', 'hold', 'hold-0', 'acct-0-key-0'],
      ['acct-0', 'capture', 'hold-0', 'acct-0-key-0'],
      ['acct-0', 'hold', 'hold-1', null],
      ['acct-0', 'hold', 'hold-2', 'acct-0-key-1'],
      ['acct-0', 'capture', 'hold-2', 'acct-0-key-1'],
      ['acct-0', 'capture', 'hold-1', null],
      ['acct-1', 'hold', 'hold-0', 'acct-1-key-0'],
      ['acct-1', 'release', 'hold-0', 'acct-1-key-0'],
      ['acct-1', 'topup', null, null],
    ]);
    expect(oneAtATime.call_log!.map((c) => [c.account_id, c.status, big(c.cost)])).toEqual(
      expect.arrayContaining([
        ['acct-0', 'success', 3_000_000_000n],
        ['acct-1', 'rejected', 0n],
        ['acct-1', 'error', 0n],
      ]),
    );
    const urls = oneAtATime.call_log!.flatMap((c) => c.result_urls as string[]);
    expect(urls).toEqual(expect.arrayContaining(['https://files.example/a,b.png', 'q"uote\\slash']));
  });
});
