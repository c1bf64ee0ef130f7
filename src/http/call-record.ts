import type { FastifyRequest } from 'fastify';
import type { CallRecord } from '../events/catalog';

/** What a call-log row needs to know about a call in progress, whatever the endpoint. */
export interface CallFacts {
  readonly request: FastifyRequest;
  /** The call-log `endpoint`: a chat protocol, or e.g. `images.generations`. */
  readonly endpoint: string;
  readonly startedAt: number;
  readonly submittedAt: number;
  model: string;
  attempts: number;
  channelId: string | null;
}

/** The outcome of a call as its call-log row: the facts so far, and what the outcome adds. */
export function callRecord(facts: CallFacts, fields: Partial<CallRecord> & Pick<CallRecord, 'status'>): CallRecord {
  return {
    request_id: facts.request.id,
    key_id: facts.request.caller?.keyId ?? null,
    model: facts.model,
    endpoint: facts.endpoint,
    error_code: null,
    error_message: null,
    input_tokens: 0,
    output_tokens: 0,
    cached_tokens: 0,
    unit_count: null,
    unit_type: null,
    latency_ms: Math.max(0, Math.round(performance.now() - facts.startedAt)),
    attempts_count: facts.attempts,
    channel_id: facts.channelId,
    task_id: null,
    submitted_at: facts.submittedAt,
    result_urls: [],
    result_expires_at: null,
    ...fields,
  };
}
