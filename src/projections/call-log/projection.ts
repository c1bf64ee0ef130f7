import type { CallRecord } from '../../events/catalog';
import type { Projection } from '../projection';

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

  async apply(tx, event, recorded) {
    let call: CallRecord | undefined;
    let cost = 0n;
    if (event.type === 'HoldSettled') {
      call = event.data.call;
      cost = event.data.captured;
    } else if (event.type === 'HoldReleased') call = event.data.call;
    else if (event.type === 'CallRejected') call = event.data.call;
    if (!call) return;
    const at = (event.data as { at: number }).at;
    await tx.query(
      `INSERT INTO call_log (id, account_id, key_id, model, endpoint, status, error_code, error_message, input_tokens, output_tokens,
                             cached_tokens, unit_count, unit_type, cost, latency_ms, request_id, task_id, channel_id, submitted_at,
                             created_at, attempts_count, result_urls, result_expires_at)
       VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::bigint, $15, $16, $17, $18, $19, $20, $21, $22::text[], $23)`,
      [
        recorded.id,
        recorded.streamId.slice('wallet-'.length),
        call.key_id,
        call.model,
        call.endpoint,
        call.status,
        call.error_code,
        call.error_message,
        call.input_tokens,
        call.output_tokens,
        call.cached_tokens,
        call.unit_count,
        call.unit_type,
        String(cost),
        call.latency_ms,
        call.request_id,
        call.task_id,
        call.channel_id,
        call.submitted_at,
        at,
        call.attempts_count,
        call.result_urls,
        call.result_expires_at,
      ],
    );
  },
};
