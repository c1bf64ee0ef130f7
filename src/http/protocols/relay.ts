import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import type { ModelRegistry } from '../../config/registry';
import type { Ledger } from '../../commands/ledger';
import { callableModel, callRecord, refuseHold, rejectCall, type CallFacts } from '../billable-call';
import { EarlyHold } from '../call-hold';
import { failedLadder, sendFailed, tryChannels, type ChannelLadder } from '../channel-ladder';
import { releaseFailed, releaseUnsettled } from '../hold-release';
import type { ChatRequestInfo, ProtocolAdapter, Usage } from '../../upstream/contract';
import type { HopResult } from '../../upstream/hop';
import { builtinToolsHold, chargeOf, holdAmount, receiptOf } from '../../upstream/pricing';
import { usageInvalidNote } from '../../upstream/usage';
import { boundedCapture, clampUsage, feeToolsNamed, outputCharsLimit } from '../../upstream/capture';
import type { Route, Router } from '../../channels/routing';
import type { SessionPins } from '../../channels/session-pins';
import { sessionHint } from './session-hint';
import { isObject, tryJson } from '../../upstream/json';
import { BodyTooLargeError, CHAT_ANSWER_BYTES, textWithin } from '../../upstream/bounded-body';
import { readAhead } from '../../upstream/read-ahead';
import { scrubberOf } from '../../upstream/scrub';
import { CallSignal, classify, statusFailure, upstreamAgent, upstreamTarget, type Failure } from '../../upstream/upstream-call';
import type { ErrorCode } from '../errors';
import { chatStages, type Stage } from './chat-stages';
import { relayBody, relayStream, type Settle } from './relay-answer';
import { channelDispatcher, shapedHeaders, shapedPath } from '../../upstream/shaping';
import { trackCall } from '../plugins/lifecycle';
import { traceSettlement, type UpstreamAttempt } from '../../tracing/spans';

export interface RelayDeps {
  readonly ledger: Ledger;
  readonly registry: ModelRegistry;
  readonly router: Router;
  /** Whole-request budget, streaming included (the spec's 180 s). */
  readonly timeoutMs: number;
  readonly dispatcher?: Dispatcher;
  readonly now: () => number;
  /** Conversations pinned to the channel that served them (issue 36, item 3); absent: none pinned. */
  readonly pins?: SessionPins;
}

export const CHAT_TIMEOUT_MS = 180_000;
const HOLD_GRACE_S = 120;

interface ChatCallFacts extends CallFacts {
  readonly adapter: ProtocolAdapter;
}

const usageFields = (usage: Usage) => ({
  input_tokens: usage.promptTokens,
  output_tokens: usage.outputTokens,
  cached_tokens: usage.cachedTokens,
  ...(usage.cacheWriteTokens > 0 ? { cache_write_tokens: usage.cacheWriteTokens } : {}),
  ...((usage.cacheWrite1hTokens ?? 0) > 0 ? { cache_write_1h_tokens: Math.min(usage.cacheWrite1hTokens!, usage.cacheWriteTokens) } : {}),
});

/**
 * One chat call, the same for every protocol: validate, resolve the model, hold the
 * worst case, try up to three channels of each model of its chain (the one ladder,
 * src/http/channel-ladder.ts), pass the answer through (streamed as it arrives), and
 * settle on the usage the upstream reported.
 */
export async function relayChat(
  deps: RelayDeps,
  adapter: ProtocolAdapter,
  request: FastifyRequest,
  reply: FastifyReply,
  /** `pin`: a session to pin to one channel (agent calls' `session_id` header, src/http/agents/pin.ts). */
  params: { model?: string; stream?: boolean; pin?: string | undefined } = {},
): Promise<unknown> {
  const caller = request.caller!;
  const ctx: ChatCallFacts = {
    request,
    adapter,
    endpoint: adapter.protocol,
    startedAt: performance.now(),
    submittedAt: deps.now(),
    model: params.model ?? String((request.body as { model?: unknown } | null)?.model ?? ''),
    attempts: 0,
    channelId: null,
  };
  reply.header('x-gateway-trace', request.id);

  const reject = (code: ErrorCode, message: string): never => rejectCall(deps.ledger, ctx, code, message);

  const info = adapter.inspect(request.body, params);
  if ('invalid' in info) return reject('invalid_request', info.invalid);
  ctx.model = info.model;
  const model = callableModel(deps.registry, caller.key.settings.allowed_models, info.model);
  if ('code' in model) return reject(model.code, model.message);
  ctx.model = model.id;
  if (model.kind !== 'text' || model.endpoint_type)
    return reject('no_channel_available', `The model \`${model.id}\` is served only on its dedicated ${model.endpoint_type ?? model.kind} endpoint.`);

  // Read before anything else looks at the body: an agent's is already rewritten, its headers are not.
  const session = deps.pins ? sessionHint(request.headers, request.body) : undefined;
  const stages = chatStages(deps, adapter, request, model, info, { ...params, session });
  if (!Array.isArray(stages)) return reject(stages.code, stages.message);
  // The hold covers the worst case of the whole chain: the dearest of its models' worst cases, so that
  // whichever model answers, its charge was held (a model that answers is billed at its own price).
  const feeTools = [...info.builtinTools, ...feeToolsNamed(request.body)];
  const amount = stages.map((st) => holdAmount(st.pricing, st.estimate, ctx.submittedAt, st.longCacheWrites) + builtinToolsHold(st.pricing, feeTools)).reduce((a, b) => (a > b ? a : b));
  // The upstream request may leave once the hold is decided; its commit is awaited before
  // anything reaches the client, before a settlement and before another channel is tried.
  const hold = EarlyHold.place(deps.ledger, ctx, { amount, purpose: `chat ${model.id}`, ttlSeconds: Math.ceil(deps.timeoutMs / 1000) + HOLD_GRACE_S }, reject);
  const decided = await hold.decided;
  if (!decided.ok) return refuseHold(decided.error, reject);

  const signal = new CallSignal(deps.timeoutMs);
  // Known to the shutdown, which ends it if it outlasts the grace.
  const untrack = trackCall(request, signal);
  hold.guard(signal, request);
  const ladder = new ChatLadder(deps, reply, ctx, info, stages, signal, hold, amount);
  try {
    return await relayLadder(deps, reply, ladder, model.id, session);
  } catch (error) {
    // A failure of the gateway's own after the hold (a bug, a translation that threw): the client
    // gets a 5xx, which is never billed, and the call its row; not left to the sweeper.
    const committed = await hold.stands();
    if (committed && !ladder.closed) {
      ladder.closed = true;
      await releaseUnsettled(deps.ledger, ctx, request.id, error);
    }
    throw error;
  } finally {
    signal.clear();
    untrack();
  }
}

/** An upstream's 2xx answer: its body (or what reads it ahead), and a non-streamed one's text and its JSON
 * (parsed once, when the attempt is judged, and handed on to relayBody). */
interface ChatAnswer {
  readonly response: Dispatcher.ResponseData;
  body: AsyncIterable<unknown>;
  text: string;
  json: unknown;
}

/** One chat call's ladder: what its attempts share, and the attempt itself. A class, so that the hot path
 * allocates no closure for the ladder's hooks. */
class ChatLadder implements ChannelLadder<ChatAnswer, Stage> {
  /** A completion has no effect outside its answer: a late or unreadable one is resent (src/channels/failover.ts). */
  readonly accepted = 'resent';
  /** Set once the hold's settlement or release is queued. */
  closed = false;

  constructor(
    readonly deps: RelayDeps,
    readonly reply: FastifyReply,
    readonly facts: ChatCallFacts,
    readonly info: ChatRequestInfo,
    readonly stages: readonly Stage[],
    readonly call: CallSignal,
    readonly hold: EarlyHold,
    /** The amount held: its capture is at most CAPTURE_FACTOR times it (src/upstream/capture.ts). */
    readonly held: bigint,
  ) {}

  attempt(route: Route, traced: UpstreamAttempt | null, stage: Stage, rung: number): Promise<HopResult<ChatAnswer>> {
    const translation = stage.translations[rung] ?? null;
    if (translation) for (const [name, value] of Object.entries(translation.headers)) this.reply.header(name, value);
    return send(this.deps, translation?.adapter ?? this.facts.adapter, route, this.facts.request, this.info, this.call, traced);
  }

  async answered(result: HopResult<ChatAnswer>): Promise<HopResult<ChatAnswer>> {
    // A stream cut while the commit is awaited must not take the frames that came before the cut with it.
    if (result.ok && this.info.stream && !this.hold.known) result.value.body = readAhead(result.value.response.body);
    await this.hold.committed().catch((refusal: unknown) => {
      if (result.ok) result.value.response.body.destroy();
      throw refusal;
    });
    if (!result.ok || this.info.stream) return result;
    // Not streamed: the answer is read whole before anything reaches the client. A body that
    // breaks off after its 200 is a failed attempt like a reset connection: not billed, and
    // another channel is tried.
    try {
      result.value.text = await textWithin(result.value.response.body, CHAT_ANSWER_BYTES);
    } catch (error) {
      return { ok: false, failure: brokenBody(error, this.call) };
    }
    // An answer the gateway cannot read is no answer: not passed on, not billed, the next channel tried.
    result.value.json = tryJson(result.value.text);
    if (!isObject(result.value.json)) return { ok: false, failure: { kind: 'unreadable', message: 'the upstream answered 200 with a body that is not a JSON object' } };
    return result;
  }
}

async function relayLadder(deps: RelayDeps, reply: FastifyReply, ladder: ChatLadder, requested: string, session: string | undefined): Promise<unknown> {
  const { facts: ctx, info, call: signal } = ladder;
  const adapter = ctx.adapter;
  const request = ctx.request;
  const outcome = await tryChannels(ladder);
  if (outcome.ok) {
    const { stage, route } = outcome;
    // The session stays where an answer began: on its pin, or re-pinned to the channel that took over.
    if (session !== undefined) deps.pins?.served(request.caller!.accountId, stage.model.id, session, route.channel.id);
    const translation = stage.translations[outcome.rung] ?? null;
    // The row names the model that answered, and the one asked for when it was a fallback.
    ctx.model = stage.model.id;
    const settle = settlement(deps, ladder, stage, route, outcome.traced, stage.model.id !== requested ? { requested_model: requested } : {});
    const { response, body, text, json } = outcome.value;
    if (!info.stream) return relayBody(text, json, response, translation?.adapter ?? adapter, reply, stage.estimate, stage.bounds, settle, translation);
    return relayStream(body, adapter, info, request, reply, stage.estimate, stage.bounds, outputCharsLimit(stage.ceiling), settle, signal, translation, scrubberOf(route.channel));
  }
  // Every channel failed before an answer started: nothing billed. The message is read in the protocol of the last channel tried.
  const failedAdapter = (outcome.stage && outcome.stage.translations[outcome.rung]?.adapter) || adapter;
  const failed = failedLadder(outcome.failure, failedAdapter.errorMessage, adapter.shape);
  ladder.closed = true;
  await releaseFailed(deps.ledger, ctx, request.id, failed.code, failed.message);
  return sendFailed(reply, failed);
}

/**
 * Settled after the answer has gone out, without making the client wait: the command is queued at once
 * (later reads and reservations of the wallet come after it) and shares its append with the wallet's next
 * commands. A hold whose settlement never lands (the process died) is released by the sweeper: the call is
 * then free, never double-billed.
 */
function settlement(deps: RelayDeps, ladder: ChatLadder, stage: Stage, route: Route, traced: UpstreamAttempt | null, fallback: { requested_model?: string }): Settle {
  const ctx = ladder.facts;
  const request = ctx.request;
  const caller = request.caller!;
  const holdId = request.id;
  return (reported, status, error, invalidUsage) => {
    // Billed on no more than the request could cause, and never above the capture bound.
    const usage = clampUsage(reported, stage.ceiling);
    // Priced first: a usage that cannot be priced leaves the call open for relayChat's release.
    const charge = chargeOf(stage.pricing, usage, ctx.submittedAt);
    const { captured, uncharged } = boundedCapture(charge.amount, ladder.held);
    request.callMeter?.charge(captured, uncharged);
    const note = invalidUsage ? usageInvalidNote(invalidUsage, error) : error ? { error_code: error.code, error_message: error.message } : {};
    const record = callRecord(ctx, { status, ...usageFields(usage), ...receiptOf(usage, charge), ...note, ...fallback });
    if (invalidUsage) request.log.warn({ holdId, channel: route.channel.id, model: ctx.model, reason: invalidUsage }, 'upstream usage invalid: the call is billed on the estimate');
    if (usage !== reported || uncharged > 0n)
      request.log.warn(
        { holdId, channel: route.channel.id, model: ctx.model, reported: usageFields(reported), billed: usageFields(usage), uncharged: String(uncharged) },
        'upstream usage beyond what the request could cause: billed within the bounds',
      );
    ladder.closed = true;
    traceSettlement(request, { holdId, amount: captured, record, attempt: traced }, () => deps.ledger.settle(caller.accountId, holdId, captured, record, true, uncharged))
      .then((settled) => {
        if (!settled.ok) request.log.error({ holdId, error: settled.error }, 'settlement refused');
      })
      .catch((failure: unknown) => request.log.error({ err: failure, holdId }, 'settlement failed; the hold sweeper will release the hold'));
    return captured;
  };
}

/** The client's vendor headers the adapter passes on (`anthropic-version`, `anthropic-beta`, `openai-beta`), under
 * their upstream names; applied after the channel's own headers, so the client's version wins over the default. */
export function forwardedHeaders(adapter: ProtocolAdapter, from: FastifyRequest['headers']): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const entry of adapter.forwardedHeaders) {
    const [name, to] = typeof entry === 'string' ? [entry, entry] : entry;
    const value = from[name];
    if (value !== undefined) headers[to] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

/** A body that failed after its 200 status, as the failure of its attempt. */
function brokenBody(error: unknown, signal: CallSignal): Failure {
  if (error instanceof BodyTooLargeError) return { kind: 'unreadable', message: error.message };
  const failure = classify(error, signal);
  return failure.kind === 'timeout' || failure.kind === 'shutdown' ? failure : { kind: 'unreachable', message: 'the upstream connection broke off during the response' };
}

async function send(
  deps: RelayDeps,
  adapter: ProtocolAdapter,
  route: Route,
  request: FastifyRequest,
  info: ChatRequestInfo,
  call: CallSignal,
  traced: UpstreamAttempt | null,
): Promise<HopResult<ChatAnswer>> {
  const { path, body } = adapter.upstream(request.body, info, route.upstreamModel);
  // Shaped by the channel's config (src/upstream/shaping.ts): path, query, auth header, extra headers.
  const headers: Record<string, string> = { 'content-type': 'application/json', ...shapedHeaders(route.channel, adapter.authHeaders(route.channel.api_key)), ...forwardedHeaders(adapter, request.headers) };
  traced?.propagate(headers);
  // Outside the try: a fault of the gateway's own here is a 500 (relayChat releases the hold), not
  // an upstream failure that the client is told is safe to retry.
  const target = upstreamTarget(route.channel.base_url, shapedPath(route.channel, path, route.upstreamModel));
  const payload = JSON.stringify(body);
  try {
    const response = await (channelDispatcher(route.channel) ?? deps.dispatcher ?? upstreamAgent).request({
      origin: target.origin,
      path: target.path,
      method: 'POST',
      headers,
      body: payload,
      signal: call.signal,
      // A channel may be given less time to start its answer: past it, the next channel is tried.
      headersTimeout: route.channel.first_byte_timeout_s ? Math.min(deps.timeoutMs, route.channel.first_byte_timeout_s * 1000) : deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
    });
    traced?.answered(response.statusCode);
    if (response.statusCode >= 400) return { ok: false, failure: await statusFailure(response.statusCode, response.headers, response.body, scrubberOf(route.channel)) };
    return { ok: true, value: { response, body: response.body, text: '', json: null } };
  } catch (error) {
    return { ok: false, failure: classify(error, call) };
  }
}
