import type { CallRecord } from '../../events/catalog';
import type { ProjectedEvent, Projection } from '../projection';

/** One row per final outcome of an external call: from the event that ended its hold
 * (cost = what was captured) or from CallRejected (cost 0). Attempts are folded in. */
export const callLogProjection: Projection = {
  name: 'call-log',
  streams: ['wallet-'],
  tables: ['call_log'],
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
CREATE INDEX IF NOT EXISTS call_log_by_account_time ON call_log (account_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS call_log_by_request ON call_log (request_id);`,

  async applyBatch(tx, items) {
    const rows = items.flatMap(toRow);
    if (rows.length === 0) return;
    const column = <T>(pick: (r: Row) => T) => rows.map(pick);
    // result_urls is a list per row, and unnest would flatten an array of arrays: it travels as JSON.
    await tx.query(
      `INSERT INTO call_log (id, account_id, key_id, model, endpoint, status, error_code, error_message, input_tokens, output_tokens,
                             cached_tokens, unit_count, unit_type, cost, latency_ms, request_id, task_id, channel_id, submitted_at,
                             created_at, attempts_count, result_urls, result_expires_at)
       SELECT id, account_id, key_id, model, endpoint, status, error_code, error_message, input_tokens, output_tokens,
              cached_tokens, unit_count, unit_type, cost, latency_ms, request_id, task_id, channel_id, submitted_at,
              created_at, attempts_count,
              ARRAY(SELECT u.url FROM jsonb_array_elements_text(result_urls::jsonb) WITH ORDINALITY AS u(url, n) ORDER BY u.n),
              result_expires_at
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[],
                     $10::bigint[], $11::bigint[], $12::int[], $13::text[], $14::bigint[], $15::int[], $16::text[], $17::text[],
                     $18::text[], $19::bigint[], $20::bigint[], $21::int[], $22::text[], $23::bigint[])
              AS r(id, account_id, key_id, model, endpoint, status, error_code, error_message, input_tokens, output_tokens,
                   cached_tokens, unit_count, unit_type, cost, latency_ms, request_id, task_id, channel_id, submitted_at,
                   created_at, attempts_count, result_urls, result_expires_at)`,
      [
        column((r) => r.id),
        column((r) => r.accountId),
        column((r) => r.call.key_id),
        column((r) => r.call.model),
        column((r) => r.call.endpoint),
        column((r) => r.call.status),
        column((r) => r.call.error_code),
        column((r) => r.call.error_message),
        column((r) => r.call.input_tokens),
        column((r) => r.call.output_tokens),
        column((r) => r.call.cached_tokens),
        column((r) => r.call.unit_count),
        column((r) => r.call.unit_type),
        column((r) => String(r.cost)),
        column((r) => r.call.latency_ms),
        column((r) => r.call.request_id),
        column((r) => r.call.task_id),
        column((r) => r.call.channel_id),
        column((r) => r.call.submitted_at),
        column((r) => r.at),
        column((r) => r.call.attempts_count),
        column((r) => JSON.stringify(r.call.result_urls)),
        column((r) => r.call.result_expires_at),
      ],
    );
  },
};

interface Row {
  id: string;
  accountId: string;
  call: CallRecord;
  cost: bigint;
  at: number;
}

function toRow({ event, recorded }: ProjectedEvent): Row[] {
  let call: CallRecord | undefined;
  let cost = 0n;
  if (event.type === 'HoldSettled') {
    call = event.data.call;
    cost = event.data.captured;
  } else if (event.type === 'HoldReleased') call = event.data.call;
  else if (event.type === 'CallRejected') call = event.data.call;
  if (!call) return [];
  return [{ id: recorded.id, accountId: recorded.streamId.slice('wallet-'.length), call, cost, at: (event.data as { at: number }).at }];
}
