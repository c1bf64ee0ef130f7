import { copyLine } from '../../storage/copy-text';
import type { SqlQuery } from '../../storage/sql';
import { inSlices, secondaryIndex, uniqueIndex, WHOLE, type ProjectedEvent, type Projection } from '../projection';

/** A capture or release looks up its hold's row: without this a hot account's settlement scans its whole ledger.
 * A rebuild keeps the open holds' keys in memory instead, and builds this index at the end. */
const BY_HOLD = secondaryIndex('ledger_entries_by_hold', 'ledger_entries (account_id, hold_id) WHERE hold_id IS NOT NULL');
/** An event's id is unique in the log already; kept up to date row by row, this index of random ids cost a
 * rebuild more than the rows (a constraint in the table's first version, a unique index once rebuilt). */
const EVENT_ID = uniqueIndex('ledger_entries', 'event_id');

/** What a rebuild carries from batch to batch (RebuildMemory): each account's running totals after its
 * newest row, and the key of each hold still open. */
interface Carried {
  readonly balances: Map<string, { balance: bigint; held: bigint }>;
  readonly holdKeys: Map<string, string | null>;
}

/** One row per money movement of an account, with the running balance and held
 * amount after it: the statement a finance team reconciles against. */
export const ledgerProjection: Projection = {
  name: 'ledger',
  streams: ['wallet-'],
  tables: ['ledger_entries'],
  secondaryIndexes: [BY_HOLD, EVENT_ID],
  schema: `
CREATE TABLE IF NOT EXISTS ledger_entries (
  account_id text NOT NULL,
  seq bigint NOT NULL,
  event_id uuid NOT NULL UNIQUE,
  entry_type text NOT NULL,
  amount bigint NOT NULL,
  balance_after bigint NOT NULL,
  held_after bigint NOT NULL,
  hold_id text,
  key_id text,
  reference text,
  at bigint NOT NULL,
  PRIMARY KEY (account_id, seq)
);
${BY_HOLD.create}
${EVENT_ID.create}`,

  async applyBatch(tx, items, writes = WHOLE, memory) {
    const entries: Entry[] = [];
    for (const item of items) {
      const entry = toEntry(item);
      if (entry) entries.push(entry);
    }
    if (entries.length === 0) return;
    const carried = memory?.of<Carried>(() => ({ balances: new Map(), holdKeys: new Map() }));
    const keyOf = carried?.holdKeys ?? (await holdKeys(tx, entries));
    // Running totals go on from each account's newest row, through the batch in log order.
    const last = carried?.balances ?? (await lastBalances(tx, [...new Set(entries.map((e) => e.accountId))]));
    const rows = entries.map((e) => {
      const before = last.get(e.accountId) ?? { balance: 0n, held: 0n };
      const after = { balance: before.balance + e.balance, held: before.held + e.held };
      last.set(e.accountId, after);
      const key = e.holdId === null ? null : holdKey(e.accountId, e.holdId);
      const keyId = e.keyId !== undefined ? e.keyId : (keyOf.get(key!) ?? null);
      if (e.type === 'hold') keyOf.set(key!, e.keyId ?? null);
      // A hold closes once (the wallet refuses a second close): a rebuild's memory keeps only the open ones.
      else if (carried && key !== null) keyOf.delete(key);
      return { entry: e, keyId, after };
    });
    if (writes.copy) {
      let lines = '';
      for (const { entry: e, keyId, after } of rows)
        lines += copyLine([e.accountId, e.seq, e.eventId, e.type, e.amount, after.balance, after.held, e.holdId, keyId, e.reference, e.at]);
      await tx.copyFrom('ledger_entries', COLUMNS, lines);
      return;
    }
    await inSlices(rows, writes, (slice) =>
      tx.query(
        `INSERT INTO ledger_entries (account_id, seq, event_id, entry_type, amount, balance_after, held_after, hold_id, key_id, reference, at)
         SELECT * FROM json_to_recordset($1::json)
                    AS r(account_id text, seq bigint, event_id uuid, entry_type text, amount bigint, balance_after bigint, held_after bigint,
                         hold_id text, key_id text, reference text, at bigint)`,
        [
          JSON.stringify(
            slice.map(({ entry, keyId, after }) => ({
              account_id: entry.accountId,
              seq: String(entry.seq),
              event_id: entry.eventId,
              entry_type: entry.type,
              amount: String(entry.amount),
              balance_after: String(after.balance),
              held_after: String(after.held),
              hold_id: entry.holdId,
              key_id: keyId,
              reference: entry.reference,
              at: entry.at,
            })),
          ),
        ],
      ),
    );
  },
};

const COLUMNS = ['account_id', 'seq', 'event_id', 'entry_type', 'amount', 'balance_after', 'held_after', 'hold_id', 'key_id', 'reference', 'at'];

/** One shape for every entry (no optional fields, no spreads): V8 keeps these objects on one
 * hidden class, where per-type shapes built by spreading cost microseconds each. */
interface Entry {
  accountId: string;
  seq: bigint;
  eventId: string;
  type: 'grant' | 'topup' | 'hold' | 'capture' | 'release' | 'adjustment' | 'debit';
  amount: bigint;
  /** What the movement adds to the balance and to the held amount. */
  balance: bigint;
  held: bigint;
  holdId: string | null;
  /** Known for a hold (its key or null); a capture or release takes its hold's key (undefined here). */
  keyId: string | null | undefined;
  reference: string | null;
  at: number;
}

function entry(
  { recorded }: ProjectedEvent,
  type: Entry['type'],
  amount: bigint,
  balance: bigint,
  held: bigint,
  holdId: string | null,
  keyId: string | null | undefined,
  reference: string | null,
  at: number,
): Entry {
  return { accountId: recorded.streamId.slice('wallet-'.length), seq: recorded.revision, eventId: recorded.id, type, amount, balance, held, holdId, keyId, reference, at };
}

function toEntry(item: ProjectedEvent): Entry | null {
  const { event } = item;
  switch (event.type) {
    case 'CreditGranted':
      return entry(item, 'grant', event.data.amount, event.data.amount, 0n, null, null, event.data.reason, event.data.at);
    case 'WalletToppedUp':
      return entry(item, 'topup', event.data.amount, event.data.amount, 0n, null, null, event.data.reference, event.data.at);
    case 'FundsReserved':
      return entry(item, 'hold', event.data.amount, 0n, event.data.amount, event.data.hold_id, event.data.key_id, event.data.purpose, event.data.at);
    case 'HoldSettled':
      return entry(item, 'capture', event.data.captured, -event.data.captured, -event.data.hold_amount, event.data.hold_id, undefined, null, event.data.at);
    case 'HoldReleased':
      return entry(item, 'release', event.data.amount, 0n, -event.data.amount, event.data.hold_id, undefined, event.data.reason, event.data.at);
    case 'WalletAdjusted':
      // Signed: a credit back is positive, a further debit negative.
      return entry(item, 'adjustment', event.data.amount, event.data.amount, 0n, null, null, event.data.reference, event.data.at);
    case 'WalletDebited':
      // A refund or a lost dispute: the provider took the money back.
      return entry(item, 'debit', event.data.amount, -event.data.amount, 0n, null, null, event.data.reference, event.data.at);
    default:
      return null;
  }
}

const holdKey = (accountId: string, holdId: string) => `${accountId}\u0000${holdId}`;

/** Keys of the holds that the batch captures or releases but an earlier batch reserved. */
async function holdKeys(tx: SqlQuery, entries: readonly Entry[]): Promise<Map<string, string | null>> {
  const reservedHere = new Set(entries.filter((e) => e.type === 'hold').map((e) => holdKey(e.accountId, e.holdId!)));
  const wanted = entries.filter((e) => e.holdId !== null && e.keyId === undefined && !reservedHere.has(holdKey(e.accountId, e.holdId!)));
  const keys = new Map<string, string | null>();
  if (wanted.length === 0) return keys;
  const rows = await tx.query<{ account_id: string; hold_id: string; key_id: string | null }>(
    `SELECT e.account_id, e.hold_id, e.key_id
       FROM unnest($1::text[], $2::text[]) AS h(account_id, hold_id)
       JOIN ledger_entries e ON e.account_id = h.account_id AND e.hold_id = h.hold_id AND e.entry_type = 'hold'`,
    [wanted.map((e) => e.accountId), wanted.map((e) => e.holdId!)],
  );
  for (const row of rows) keys.set(holdKey(row.account_id, row.hold_id), row.key_id);
  return keys;
}

/** Balance and held amount after each account's newest entry, to continue the running totals from. */
async function lastBalances(tx: SqlQuery, accountIds: readonly string[]): Promise<Map<string, { balance: bigint; held: bigint }>> {
  const rows = await tx.query<{ account_id: string; balance_after: string; held_after: string }>(
    `SELECT a.account_id, last.balance_after::text AS balance_after, last.held_after::text AS held_after
       FROM unnest($1::text[]) AS a(account_id)
       JOIN LATERAL (SELECT balance_after, held_after FROM ledger_entries
                      WHERE account_id = a.account_id ORDER BY seq DESC LIMIT 1) AS last ON true`,
    [accountIds],
  );
  return new Map(rows.map((r) => [r.account_id, { balance: BigInt(r.balance_after), held: BigInt(r.held_after) }]));
}
