import type { FastifyRequest } from 'fastify';
import type { DomainError } from '../commands/decision';
import type { Ledger } from '../commands/ledger';
import type { ModelRegistry } from '../config/registry';
import type { ModelConfig } from '../config/schema';
import type { CallRecord } from '../events/catalog';
import { boundedCall, CALL_TEXT_LIMITS, clipText } from '../projections/call-log/bounds';
import { tryJson } from '../upstream/json';
import type { Failure } from '../upstream/upstream-call';
import { countCall } from '../metrics/http';
import { GatewayError, upstreamErrorCode, type ErrorCode } from './errors';
import { AUTH_MESSAGES } from './plugins/auth';
import { spendCapRefusal } from '../commands/wallet/decider';

// What every billable call (chat, media) shares around its hold: the call-log row, refusals
// before the hold, model resolution, and the answer when no channel gave one.

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

/** The outcome of a call as its call-log row: the facts so far, and what the outcome adds. Its
 * texts (the model the client named, an upstream's error message) are cut to CALL_TEXT_LIMITS:
 * the record is written twice (event and row) whatever the client or the upstream sent. */
export function callRecord(facts: CallFacts, fields: Partial<CallRecord> & Pick<CallRecord, 'status'>): CallRecord {
  // Every record built is written: the refused-calls plugin then adds no row of its own.
  facts.request.callRecorded = true;
  const record = boundedCall({
    request_id: facts.request.id,
    key_id: facts.request.caller?.keyId ?? null,
    // An agent key's calls are attributed to its agent (Agent key usage rule 8).
    ...(facts.request.caller?.key.agentId ? { agent_id: facts.request.caller.key.agentId } : {}),
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
  });
  // One record per call: the call's metrics are its record's.
  countCall(facts.request, facts.startedAt, record);
  return record;
}

/** A call refused before it could hold money still gets its call-log row (cost 0). The record is
 * queued before the answer leaves, so every later read of the wallet sees it; not awaited. */
export function rejectCall(ledger: Ledger, facts: CallFacts, code: ErrorCode, message: string, fields: Partial<CallRecord> = {}, statuses: EndpointStatuses = {}): never {
  ledger
    .recordRejected(facts.request.caller!.accountId, callRecord(facts, Object.assign({}, fields, { status: 'rejected' as const, error_code: code, error_message: message })), true)
    .catch((error: unknown) => facts.request.log.error({ err: error }, 'could not record a rejected call'));
  throw new GatewayError(code, message, {}, statuses[code]);
}

/** An endpoint's own statuses for some codes, where the spec lists them apart from the main table (Errors rule 8). */
export type EndpointStatuses = Partial<Record<ErrorCode, number>>;

/** The canonical model a call names, if it exists, is callable and the key may use it. */
export function callableModel(registry: ModelRegistry, allowList: readonly string[] | null, id: string): ModelConfig | { code: ErrorCode; message: string } {
  const model = registry.resolve(id);
  // The id is the client's text: quoted back within the same bound as the call record keeps.
  if (!model || !model.callable)
    return { code: 'model_not_found', message: `The model \`${clipText(id, CALL_TEXT_LIMITS.model)}\` does not exist or you do not have access to it.` };
  if (!registry.allows(allowList, model.id)) return { code: 'model_not_allowed', message: `This API key is not allowed to use the model \`${model.id}\`.` };
  return model;
}

/** A refused hold as the client sees it: an account deactivated meanwhile is a 401 like at
 * authentication; anything else (balance, spend cap) a 402 with the decider's message. */
export function refuseHold(error: DomainError, reject: (code: ErrorCode, message: string) => never): never {
  if (error.code === 'account_inactive') throw new GatewayError('invalid_api_key', AUTH_MESSAGES.inactive);
  return reject('quota_exceeded', error.message);
}

/** What the client is told when every channel failed before an answer: an upstream status keeps
 * its status and message (Errors rule 5), a time-out is 504, a failed connection 502 (rule 6), a
 * call the gateway ended at its shutdown 503. */
export function failureSummary(failure: Failure, errorMessage: (body: unknown) => string | null): { status: number; code: string; message: string } {
  if (failure.kind === 'timeout') return { status: 504, code: 'upstream_timeout', message: failure.message };
  // An answer the gateway could not read is a bad gateway too (rule 6), with its own message.
  if (failure.kind === 'unreachable' || failure.kind === 'unreadable') return { status: 502, code: 'upstream_unreachable', message: failure.message };
  if (failure.kind === 'shutdown') return { status: 503, code: 'gateway_shutting_down', message: failure.message };
  if (failure.kind === 'no_channel') return { status: 503, code: 'no_channel_available', message: failure.message };
  const message = errorMessage(tryJson(failure.body)) ?? (failure.body.slice(0, 2000) || `upstream answered ${failure.status}`);
  return { status: failure.status, code: upstreamErrorCode(failure.status), message };
}

/** A billable call as it begins: its facts (attempts and channel filled in as it goes), and its refusal
 * before any hold, a `rejected` call-log row of `unitType` and the error thrown (with the endpoint's own
 * `statuses`, where it has any). */
export function beginCall(ledger: Ledger, now: () => number, request: FastifyRequest, endpoint: string, unitType: string, statuses: EndpointStatuses = {}) {
  const facts: CallFacts = {
    request,
    endpoint,
    startedAt: performance.now(),
    submittedAt: now(),
    model: String((request.body as { model?: unknown } | null)?.model ?? ''),
    attempts: 0,
    channelId: null,
  };
  const reject = (code: ErrorCode, message: string): never => rejectCall(ledger, facts, code, message, { unit_type: unitType }, statuses);
  return { facts, reject };
}

/**
 * Whether the replaying key may receive a stored answer of an Idempotency-Key (the answer was stored for
 * the account; this key may be another): the refusal a new call of this key would meet, for `model` (its
 * allow-list) at the reservation `amount` (its spend cap). The account's balance is not checked again:
 * the call was paid when it ran.
 */
export function replayRefusal(caller: NonNullable<FastifyRequest['caller']>, model: ModelConfig | { code: ErrorCode; message: string }, amount: (model: ModelConfig) => bigint): GatewayError | null {
  if ('code' in model) return new GatewayError(model.code, model.message);
  const capped = spendCapRefusal(caller.wallet, caller.keyId, caller.key.settings.spend_cap, amount(model));
  return capped ? new GatewayError('quota_exceeded', capped.message) : null;
}
