import type { FastifyRequest } from 'fastify';
import type { CallRecord } from '../events/catalog';
import { redactUrl } from './redact';
import { formatUsd } from '../money/usd';

/** pino's numeric level of `info`. */
const INFO = 30;

/** What one access-log line says of a billable call (absent for every other request). */
export interface AccessCall {
  readonly record: CallRecord;
  /** The amount billed, nano-USD. */
  readonly cost: bigint;
}

/**
 * The one line a request leaves at `info` (fastify's own two request lines are off): enough for an
 * operator to answer "who called what, what did it cost, how long did it take" without the call
 * log, and cheap enough to keep on by default. The request id (`reqId`, the call log's
 * `request_id` and the `x-gateway-trace` header) comes with the request's logger.
 */
export function accessLine(request: FastifyRequest, status: number, latencyMs: number, call: AccessCall | null): Record<string, unknown> {
  const line: Record<string, unknown> = {
    method: request.method,
    url: redactUrl(request.url),
    status,
    latency_ms: Math.round(latencyMs * 10) / 10,
    // The client's address: a trusted proxy's X-Forwarded-For when TRUST_PROXY says so.
    ip: request.ip,
  };
  const caller = request.caller;
  if (caller) {
    line.account = caller.accountId;
    line.key = caller.keyId;
  }
  if (call) {
    const { record } = call;
    line.model = record.model;
    line.outcome = record.status;
    if (record.error_code) line.error = record.error_code;
    line.input_tokens = record.input_tokens;
    line.output_tokens = record.output_tokens;
    if (record.cached_tokens > 0) line.cached_tokens = record.cached_tokens;
    if (record.unit_count !== null) line.units = `${record.unit_count} ${record.unit_type ?? ''}`.trim();
    line.cost_usd = formatUsd(call.cost);
    if (record.channel_id) line.channel = record.channel_id;
    if (record.attempts_count > 1) line.attempts = record.attempts_count;
    if (record.task_id) line.task = record.task_id;
  }
  return line;
}

export function logAccess(request: FastifyRequest, status: number, latencyMs: number, call: AccessCall | null): void {
  // Checked first: above info (LOG_LEVEL=warn) the line costs one comparison. pino's
  // levelVal; a logger without one (fastify's abstract logger, logging off) writes nothing.
  const level = (request.log as { levelVal?: number }).levelVal;
  if (level === undefined || level > INFO) return;
  request.log.info(accessLine(request, status, latencyMs, call), 'access');
}
