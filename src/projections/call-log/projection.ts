import type { CallRecord } from '../../events/catalog';
import { copyLine, copyTextArray } from '../../storage/copy-text';
import type { SqlQuery } from '../../storage/sql';
import { inSlices, secondaryIndex, WHOLE, type ProjectedEvent, type Projection } from '../projection';
import { boundedCall } from './bounds';

// The admin and usage reads (queries.ts); a rebuild builds them after the load (SecondaryIndex).
const BY_ACCOUNT_TIME = secondaryIndex('call_log_by_account_time', 'call_log (account_id, created_at DESC, id DESC)');
const BY_REQUEST = secondaryIndex('call_log_by_request', 'call_log (request_id)');
const BY_AGENT = secondaryIndex('call_log_by_agent', 'call_log (account_id, agent_id, created_at DESC) WHERE agent_id IS NOT NULL');

/** One row per final outcome of an external call: from the event that ended its hold
 * (cost = what was captured) or from CallRejected (cost 0). Attempts are folded in. */
export const callLogProjection: Projection = {
  name: 'call-log',
  streams: ['wallet-'],
  tables: ['call_log'],
  secondaryIndexes: [BY_ACCOUNT_TIME, BY_REQUEST, BY_AGENT],
  schema: `
CREATE TABLE IF NOT EXISTS call_log (
  id uuid PRIMARY KEY,
  account_id text NOT NULL,
  key_id text,
  model text NOT NULL,
  endpoint text NOT NULL,
  status text NOT NULL,
  error_code text,
  error_message text,
  input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  cached_tokens bigint NOT NULL,
  unit_count integer,
  unit_type text,
  cost bigint NOT NULL,
  latency_ms integer NOT NULL,
  request_id text NOT NULL,
  task_id text,
  channel_id text,
  submitted_at bigint NOT NULL,
  created_at bigint NOT NULL,
  attempts_count integer NOT NULL,
  result_urls text[] NOT NULL,
  result_expires_at bigint
);
-- What re-rates changed: the signed sum of (new cost − old cost), and the last re-rate's reference.
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS adjustment bigint NOT NULL DEFAULT 0;
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS adjustment_reference text;
${BY_ACCOUNT_TIME.create}
${BY_REQUEST.create}
-- The built-in tool fee part of the cost (nano-dollars); the calls are unit_count of unit_type. Added later, so added here.
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS tool_fee bigint;
-- The enterprise agent whose key made the call (null: an ordinary key). Added later, so added here.
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS agent_id text;
${BY_AGENT.create}
-- The model the client asked for, when a fallback answered (model: the one that answered). Added later, so added here.
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS requested_model text;
-- What a re-rate needs to price a call as it was billed: its cache writes, and the hold its capture was bounded by. Added later, so added here.
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS cache_write_tokens bigint;
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS hold bigint;
-- The part of cache_write_tokens written for 1 hour (null: none, as on records from before the split). Added later, so added here.
ALTER TABLE call_log ADD COLUMN IF NOT EXISTS cache_write_1h_tokens bigint;`,

  async applyBatch(tx, items, writes = WHOLE) {
    const rows = items.flatMap(toRow);
    if (writes.copy) await copyRows(tx, rows);
    else await inSlices(rows, writes, (slice) => insertRows(tx, slice));
    // A call's row always comes before any adjustment of it in the log, so after this batch's inserts.
    const adjusted = adjustments(items);
    if (adjusted.length > 0) await adjustRows(tx, adjusted);
  },
};

/** The rows travel as one JSON document: the call record is JSON already, and one native
 * JSON.stringify costs far less than `pg` building a Postgres array literal per column. */
async function insertRows(tx: SqlQuery, rows: readonly Row[]) {
  await tx.query(
    `INSERT INTO call_log (id, account_id, key_id, model, endpoint, status, error_code, error_message, input_tokens, output_tokens,
                           cached_tokens, unit_count, unit_type, cost, latency_ms, request_id, task_id, channel_id, submitted_at,
                           created_at, attempts_count, result_urls, result_expires_at, tool_fee, agent_id, requested_model, cache_write_tokens, hold,
                           cache_write_1h_tokens)
     SELECT r.id, r.account_id, c.key_id, c.model, c.endpoint, c.status, c.error_code, c.error_message, c.input_tokens, c.output_tokens,
            c.cached_tokens, c.unit_count, c.unit_type, r.cost, c.latency_ms, c.request_id, c.task_id, c.channel_id, c.submitted_at,
            r.created_at, c.attempts_count, c.result_urls, c.result_expires_at, c.tool_fee, c.agent_id, c.requested_model, c.cache_write_tokens, r.hold,
            c.cache_write_1h_tokens
       FROM json_to_recordset($1::json) AS r(id uuid, account_id text, cost bigint, created_at bigint, hold bigint, call json),
            json_to_record(r.call) AS c(key_id text, model text, endpoint text, status text, error_code text, error_message text,
                                        input_tokens bigint, output_tokens bigint, cached_tokens bigint, unit_count int, unit_type text,
                                        latency_ms int, request_id text, task_id text, channel_id text, submitted_at bigint,
                                        attempts_count int, result_urls text[], result_expires_at bigint, tool_fee bigint, agent_id text,
                                        requested_model text, cache_write_tokens bigint, cache_write_1h_tokens bigint)`,
    [JSON.stringify(rows.map((r) => ({ id: r.id, account_id: r.accountId, cost: String(r.cost), created_at: r.at, hold: r.hold === null ? null : String(r.hold), call: r.call })))],
  );
}

const COPY_COLUMNS = ['id', 'account_id', 'key_id', 'model', 'endpoint', 'status', 'error_code', 'error_message', 'input_tokens', 'output_tokens',
  'cached_tokens', 'unit_count', 'unit_type', 'cost', 'latency_ms', 'request_id', 'task_id', 'channel_id', 'submitted_at',
  'created_at', 'attempts_count', 'result_urls', 'result_expires_at', 'tool_fee', 'agent_id', 'requested_model', 'cache_write_tokens', 'hold',
  'cache_write_1h_tokens'];

/** The same rows as insertRows writes, loaded with COPY (a rebuild). */
async function copyRows(tx: SqlQuery, rows: readonly Row[]) {
  let lines = '';
  for (const { id, accountId, call: c, cost, at, hold } of rows)
    lines += copyLine([
      id, accountId, c.key_id, c.model, c.endpoint, c.status, c.error_code, c.error_message, c.input_tokens, c.output_tokens,
      c.cached_tokens, c.unit_count, c.unit_type, cost, c.latency_ms, c.request_id, c.task_id, c.channel_id, c.submitted_at,
      at, c.attempts_count, copyTextArray(c.result_urls), c.result_expires_at, c.tool_fee, c.agent_id, c.requested_model, c.cache_write_tokens, hold,
      c.cache_write_1h_tokens,
    ]);
  await tx.copyFrom('call_log', COPY_COLUMNS, lines);
}

interface Row {
  id: string;
  accountId: string;
  call: CallRecord;
  cost: bigint;
  /** The hold a settled call's capture was bounded by (null: released or rejected). */
  hold: bigint | null;
  at: number;
}

function toRow({ event, recorded }: ProjectedEvent): Row[] {
  let call: CallRecord | undefined;
  let cost = 0n;
  let hold: bigint | null = null;
  if (event.type === 'HoldSettled') {
    call = event.data.call;
    cost = event.data.captured;
    hold = event.data.hold_amount;
  } else if (event.type === 'HoldReleased') call = event.data.call;
  else if (event.type === 'CallRejected') call = event.data.call;
  if (!call) return [];
  // Bounded here too: events written before the call records were (and a rebuild from them).
  return [{ id: recorded.id, accountId: recorded.streamId.slice('wallet-'.length), call: boundedCall(call), cost, hold, at: (event.data as { at: number }).at }];
}

interface Adjustment {
  account_id: string;
  request_id: string;
  delta: string;
  reference: string;
}

/** What the batch's re-rates change per call, summed when one batch re-rates a call twice. */
function adjustments(items: readonly ProjectedEvent[]): Adjustment[] {
  const byCall = new Map<string, { accountId: string; requestId: string; delta: bigint; reference: string }>();
  for (const { event, recorded } of items) {
    if (event.type !== 'WalletAdjusted') continue;
    const accountId = recorded.streamId.slice('wallet-'.length);
    for (const call of event.data.calls) {
      const key = `${accountId}\u0000${call.request_id}`;
      const prior = byCall.get(key);
      const delta = (prior?.delta ?? 0n) + call.new_cost - call.old_cost;
      byCall.set(key, { accountId, requestId: call.request_id, delta, reference: event.data.reference });
    }
  }
  return [...byCall.values()].map((a) => ({ account_id: a.accountId, request_id: a.requestId, delta: String(a.delta), reference: a.reference }));
}

async function adjustRows(tx: SqlQuery, adjusted: readonly Adjustment[]) {
  await tx.query(
    `UPDATE call_log AS c SET adjustment = c.adjustment + a.delta, adjustment_reference = a.reference
       FROM json_to_recordset($1::json) AS a(account_id text, request_id text, delta bigint, reference text)
      WHERE c.account_id = a.account_id AND c.request_id = a.request_id AND c.status IN ('success', 'interrupted')`,
    [JSON.stringify(adjusted)],
  );
}
