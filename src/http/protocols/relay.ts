import type { FastifyReply, FastifyRequest } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import type { Ledger, Result } from '../../commands/ledger';
import type { ModelRegistry } from '../../config/registry';
import { CHAT_PROTOCOLS, channelServes, type ModelConfig } from '../../config/schema';
import type { CallRecord } from '../../events/catalog';
import { callableModel, callRecord, failureSummary, refuseHold, rejectCall, type CallFacts } from '../billable-call';
import { releaseUnsettled } from '../hold-release';
import type { ChatRequestInfo, ProtocolAdapter, StreamEvent, Usage } from '../../upstream/contract';
import { builtinToolsHold, chargeOf, holdAmount, pricingOf, receiptOf, tokensFromChars, type TokenPricing } from '../../upstream/pricing';
import { checkUsage, isInvalidUsage, usageBounds, usageInvalidNote, type UsageBounds } from '../../upstream/usage';
import { boundedCapture, clampUsage, deliveredChars, feeToolsNamed, OUTPUT_CUT, outputCharsLimit, requestShape, usageCeiling, type UsageCeiling } from '../../upstream/capture';
import type { Route, RouteSource, Router } from '../../channels/routing';
import { callerGroup } from '../../channels/groups';
import { isObject, tryJson } from '../../upstream/json';
import { BodyTooLargeError, CHAT_ANSWER_BYTES, textWithin } from '../../upstream/bounded-body';
import { readAhead } from '../../upstream/read-ahead';
import { scrubbedFrame, scrubberOf, scrubKeyShaped, type Scrub } from '../../upstream/scrub';
import { CallSignal, classify, statusFailure, upstreamAgent, upstreamTarget, type Failure } from '../../upstream/upstream-call';
import { GatewayError, upstreamErrorBody, type ErrorCode } from '../errors';
import { formatUsd } from '../../money/usd';
import { ClientStream } from './client-stream';
import { callEstimate } from './estimate';
import { streamUsage } from './stream-usage';
import { writeShutdownFrame } from './shutdown-frame';
import { attemptAnswered, attemptFailed } from '../../channels/attempt';
import { fallsBack } from '../../channels/failover';
import { fallbackChain } from '../../config/fallbacks';
import { channelDispatcher, shapedHeaders, shapedPath } from '../../upstream/shaping';
import { trackCall } from '../plugins/lifecycle';
import { builtinToolRoutes, decodeCall, isTranslated, translatedRoutes, translationFor, type Translation } from './translated';
import { traceAttempt, traceHold, traceSettlement, type UpstreamAttempt } from '../../tracing/spans';
import { pinnedOrder } from '../agents/pin';

export interface RelayDeps {
  readonly ledger: Ledger;
  readonly registry: ModelRegistry;
  readonly router: Router;
  /** Whole-request budget, streaming included (the spec's 180 s). */
  readonly timeoutMs: number;
  readonly dispatcher?: Dispatcher;
  readonly now: () => number;
}

export const CHAT_TIMEOUT_MS = 180_000;
/** The header of a non-streamed chat answer that carries the call's settled cost in USD. */
export const COST_HEADER = 'x-gateway-cost';
const HOLD_GRACE_S = 120;
/** Pause before a trailing out-of-framing piece (a bare error object) so it reaches the client on its own. */
const STRAY_GAP_MS = 50;
/** The most one upstream SSE event may hold (a partial line and the data lines of an event not yet
 * ended), in characters: room for a few base64 images in one `response.completed`; past it the
 * stream is treated as broken rather than buffered without end. */
export const MAX_EVENT_CHARS = 32 * 1024 * 1024;

function sse(event: StreamEvent): string {
  const lines = event.data.split('\n').map((line) => `data: ${line}`).join('\n');
  return `${event.event ? `event: ${event.event}\n` : ''}${lines}\n\n`;
}

interface CallContext extends CallFacts {
  readonly adapter: ProtocolAdapter;
}

/** `invalidUsage`: why the upstream's usage was not believed (the call is then billed on the estimate). */
/** Settles the call on `usage`; returns the amount captured (the cost header of a non-streamed answer). */
type Settle = (usage: Usage, status: CallRecord['status'], error?: { code: string; message: string }, invalidUsage?: string | null) => bigint;

const usageFields = (usage: Usage) => ({
  input_tokens: usage.promptTokens,
  output_tokens: usage.outputTokens,
  cached_tokens: usage.cachedTokens,
  ...(usage.cacheWriteTokens > 0 ? { cache_write_tokens: usage.cacheWriteTokens } : {}),
});

/**
 * One chat call, the same for every protocol: validate, resolve the model, hold the
 * worst case, try up to three channels, pass the answer through (streamed as it
 * arrives), and settle on the usage the upstream reported.
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
  const ctx: CallContext = {
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

  // Only the channels of the caller's group (its key's, else its account's; none bound: every channel).
  const group = callerGroup(caller);
  const router = deps.router.scoped(group);
  // The model, then its fallbacks (src/config/fallbacks.ts) the key may use, each with the channels it
  // would try, taken now: a reload during the call changes none of them.
  const chain = fallbackChain(model, (id) => deps.registry.resolve(id)).filter((m, i) => i === 0 || usableFallback(deps, caller.key.settings.allowed_models, m));
  const found = chain.map((m) => routesFor(router, group, adapter, m, info));
  const first = found[0]!;
  if ('code' in first && found.every((f) => 'code' in f)) return reject(first.code, first.message);
  const staged = chain.flatMap((m, i) => {
    const f = found[i]!;
    return 'code' in f ? [] : [{ model: m, routes: pinnedOrder(f.routes, params.pin, (route) => route.channel.id) }];
  });
  // Translated: the client's request decoded once, and re-encoded for each route's channel.
  const decoded = staged.some((st) => st.routes.some(isTranslated)) ? decodeCall(adapter, request.body, params, info, deps.now()) : null;
  const shape = requestShape(request.body);
  const stages: Stage[] = staged.map(({ model: m, routes }) => {
    const attempts = routes.map((route) => ({ route, translation: decoded && isTranslated(route) ? translationFor(decoded, adapter, route, m) : null }));
    const estimate = callEstimate(m, attempts.map((a) => a.translation?.asked ?? info));
    const pricing = pricingOf(m, deps.registry.config.discounts);
    const ceiling = usageCeiling(m, shape, info.maxTokens, info.choices, estimate.outputTokens);
    return { model: m, attempts, estimate, bounds: usageBounds(m, info), ceiling, pricing };
  });
  const holdId = request.id;
  // The hold covers the worst case of the whole chain: the dearest of its models' worst cases, so that
  // whichever model answers, its charge was held (a model that answers is billed at its own price).
  const feeTools = [...info.builtinTools, ...feeToolsNamed(request.body)];
  const amount = stages.map((st) => holdAmount(st.pricing, st.estimate, ctx.submittedAt) + builtinToolsHold(st.pricing, feeTools)).reduce((a, b) => (a > b ? a : b));
  // The upstream request may leave once the hold is decided; its commit is awaited before
  // anything reaches the client, before a settlement and before another channel is tried.
  const hold = traceHold(request, { amount, holdId }, () =>
    deps.ledger.reserveEarly(caller.accountId, {
      holdId,
      amount,
      keyId: caller.keyId,
      spendCap: caller.key.settings.spend_cap,
      purpose: `chat ${model.id}`,
      ttlSeconds: Math.ceil(deps.timeoutMs / 1000) + HOLD_GRACE_S,
      origin: { model: model.id, endpoint: ctx.endpoint, requestId: request.id },
    }),
  );
  const decided = await hold.decided;
  if (!decided.ok) return refuseHold(decided.error, reject);

  const signal = new CallSignal(deps.timeoutMs);
  // Known to the shutdown, which ends it if it outlasts the grace.
  const untrack = trackCall(request, signal);
  const call: Call = {
    ctx,
    info,
    requested: model.id,
    holdId,
    held: amount,
    signal,
    commit: holdCommit(hold.committed, signal, request, reject),
    closed: false,
  };
  try {
    return await relayRoutes(deps, adapter, request, reply, stages, call);
  } catch (error) {
    // A failure of the gateway's own after the hold (a bug, a translation that threw): the client
    // gets a 5xx, which is never billed, and the call its row; not left to the sweeper.
    const committed = await hold.committed.then((result) => result.ok, () => false);
    if (committed && !call.closed) {
      call.closed = true;
      await releaseUnsettled(deps.ledger, ctx, holdId, error);
    }
    throw error;
  } finally {
    signal.clear();
    untrack();
  }
}

/** What the attempts of one call share. */
interface Call {
  readonly ctx: CallContext;
  readonly info: ChatRequestInfo;
  /** The model the client asked for (the call-log row's `requested_model` when a fallback answered). */
  readonly requested: string;
  readonly holdId: string;
  /** The amount held: its capture is at most CAPTURE_FACTOR times it (src/upstream/capture.ts). */
  readonly held: bigint;
  readonly signal: CallSignal;
  readonly commit: HoldCommit;
  /** Set once the hold's settlement or release is queued. */
  closed: boolean;
}

/** One model of the call's chain (the model asked for, then its fallbacks), with what its attempts share. */
interface Stage {
  readonly model: ModelConfig;
  readonly attempts: readonly Attempt[];
  readonly estimate: Usage;
  readonly bounds: UsageBounds;
  /** The most of the usage the call may be billed on (src/upstream/capture.ts). */
  readonly ceiling: UsageCeiling;
  readonly pricing: TokenPricing;
}

/** One channel to try, and how the request is re-encoded for it when it speaks another protocol. */
interface Attempt {
  readonly route: Route;
  readonly translation: Translation | null;
}

/** The commit of a hold that was decided early: `known` once it is; `wait` throws the client's
 * refusal if the commit turned the decision over (another instance spent the wallet first). */
interface HoldCommit {
  readonly known: boolean;
  wait(): Promise<void>;
}

function holdCommit(committed: Promise<Result<unknown>>, signal: CallSignal, request: FastifyRequest, reject: (code: ErrorCode, message: string) => never): HoldCommit {
  const commit = {
    known: false,
    async wait() {
      const result = await committed;
      if (!result.ok) refuseHold(result.error, reject);
    },
  };
  committed.then(
    (result) => {
      commit.known = true;
      if (result.ok) return;
      // Nothing may be served without a committed hold: stop the upstream request now.
      signal.abort();
      request.log.warn({ holdId: request.id, code: result.error.code }, 'hold refused at commit after an early decision: upstream request stopped');
    },
    () => {
      commit.known = true;
      signal.abort();
    },
  );
  return commit;
}

async function relayRoutes(deps: RelayDeps, adapter: ProtocolAdapter, request: FastifyRequest, reply: FastifyReply, stages: readonly Stage[], call: Call): Promise<unknown> {
  const caller = request.caller!;
  const { ctx, info, holdId, signal, commit } = call;
  let failure: Failure | null = null;
  let failedAdapter = adapter;
  stages: for (const [index, stage] of stages.entries()) {
    // A fallback is tried only when the previous model's channels all failed in a way another model may not.
    if (index > 0 && !(failure !== null && fallsBack(failure, signal))) break;
    const { estimate, bounds, ceiling, pricing } = stage;
    for (const { route, translation } of stage.attempts) {
      ctx.attempts += 1;
      ctx.channelId = route.channel.id;
      const routeAdapter = translation?.adapter ?? adapter;
      if (translation) for (const [name, value] of Object.entries(translation.headers)) reply.header(name, value);
      request.callMeter?.attempt();
      const traced = traceAttempt(request, route, ctx.attempts);
      const startedAt = performance.now();
      const outcome = await send(deps, routeAdapter, route, request, info, signal, traced);
      // A stream cut while the commit is awaited must not take the frames that came before the cut with it.
      const body = 'response' in outcome ? (info.stream && !commit.known ? readAhead(outcome.response.body) : outcome.response.body) : null;
      await commit.wait().catch((refusal: unknown) => {
        if ('response' in outcome) outcome.response.body.destroy();
        throw refusal;
      });
      // Not streamed: the answer is read whole before anything reaches the client. A body that
      // breaks off after its 200 is a failed attempt like a reset connection: not billed, and
      // another channel is tried.
      let failed = 'failure' in outcome ? outcome.failure : null;
      let text = '';
      if ('response' in outcome && !info.stream) {
        try {
          text = await textWithin(outcome.response.body, CHAT_ANSWER_BYTES);
          // An answer the gateway cannot read is no answer: not passed on, not billed, the next channel tried
          // (chat resends what a paid generation does not: src/channels/failover.ts, mayHaveBeenAccepted).
          if (!isObject(tryJson(text))) failed = { kind: 'unreadable', message: 'the upstream answered 200 with a body that is not a JSON object' };
        } catch (error) {
          failed = brokenBody(error, signal);
        }
      }
      request.callMeter?.answered(route.channel.id, failed);
      if (failed) {
        traced?.failed(failed);
        // One failover rule for every ladder (src/channels/failover.ts).
        const verdict = attemptFailed(route, failed, signal, startedAt, caller.accountId);
        failure = verdict.failure;
        failedAdapter = routeAdapter;
        if (!verdict.next) continue stages;
        continue;
      }
      attemptAnswered(route, startedAt, caller.accountId);
      // The row names the model that answered, and the one asked for when it was a fallback.
      ctx.model = stage.model.id;
      const fallback = stage.model.id !== call.requested ? { requested_model: call.requested } : {};
      const { response } = outcome as { response: Dispatcher.ResponseData };
      // Settled after the answer has gone out, without making the client wait: the command is
      // queued at once (later reads and reservations of the wallet come after it) and shares
      // its append with the wallet's next commands. A hold whose settlement never lands
      // (the process died) is released by the sweeper: the call is then free, never double-billed.
      const settle: Settle = (reported, status, error, invalidUsage) => {
        // Billed on no more than the request could cause, and never above the capture bound.
        const usage = clampUsage(reported, ceiling);
        // Priced first: a usage that cannot be priced leaves the call open for relayChat's release.
        const charge = chargeOf(pricing, usage, ctx.submittedAt);
        const { captured, uncharged } = boundedCapture(charge.amount, call.held);
        request.callMeter?.charge(captured, uncharged);
        const note = invalidUsage ? usageInvalidNote(invalidUsage, error) : error ? { error_code: error.code, error_message: error.message } : {};
        const record = callRecord(ctx, { status, ...usageFields(usage), ...receiptOf(usage, charge), ...note, ...fallback });
        if (invalidUsage) request.log.warn({ holdId, channel: route.channel.id, model: ctx.model, reason: invalidUsage }, 'upstream usage invalid: the call is billed on the estimate');
        if (usage !== reported || uncharged > 0n)
          request.log.warn(
            { holdId, channel: route.channel.id, model: ctx.model, reported: usageFields(reported), billed: usageFields(usage), uncharged: String(uncharged) },
            'upstream usage beyond what the request could cause: billed within the bounds',
          );
        call.closed = true;
        traceSettlement(request, { holdId, amount: captured, record, attempt: traced }, () => deps.ledger.settle(caller.accountId, holdId, captured, record, true, uncharged))
          .then((settled) => {
            if (!settled.ok) request.log.error({ holdId, error: settled.error }, 'settlement refused');
          })
          .catch((failure: unknown) => request.log.error({ err: failure, holdId }, 'settlement failed; the hold sweeper will release the hold'));
        return captured;
      };
      if (!info.stream) return relayBody(text, response, routeAdapter, reply, estimate, bounds, settle, translation);
      return relayStream(body!, adapter, info, request, reply, estimate, bounds, outputCharsLimit(ceiling), settle, signal, translation, scrubberOf(route.channel));
    }
    }

  // Every channel failed before an answer started: nothing billed.
  const f = failure ?? { kind: 'unreachable' as const, message: 'no channel could be reached' };
  const { status, code, message } = failureSummary(f, failedAdapter.errorMessage);
  call.closed = true;
  const record = callRecord(ctx, { status: 'error', error_code: code, error_message: message });
  await traceSettlement(request, { holdId, record }, () => deps.ledger.release(caller.accountId, holdId, 'upstream failed', record));
  if (f.kind === 'status') {
    if (f.headers['retry-after']) reply.header('retry-after', f.headers['retry-after']);
    return reply.code(status).type('application/json').send(upstreamErrorBody(adapter.shape, status, message));
  }
  throw new GatewayError(code as ErrorCode, message);
}

/** A body that failed after its 200 status, as the failure of its attempt. */
function brokenBody(error: unknown, signal: CallSignal): Failure {
  if (error instanceof BodyTooLargeError) return { kind: 'unreadable', message: error.message };
  const failure = classify(error, signal);
  return failure.kind === 'timeout' || failure.kind === 'shutdown' ? failure : { kind: 'unreachable', message: 'the upstream connection broke off during the response' };
}

/** Whether a fallback model may serve the caller's call: callable, on the chat endpoints, and on the key's allow-list. */
function usableFallback(deps: RelayDeps, allowList: readonly string[] | null, model: ModelConfig): boolean {
  const callable = callableModel(deps.registry, allowList, model.id);
  return !('code' in callable) && callable.kind === 'text' && !callable.endpoint_type;
}

/** The routes of one model for the call, or why it has none. */
function routesFor(
  router: RouteSource,
  group: string | null,
  adapter: ProtocolAdapter,
  model: ModelConfig,
  info: ChatRequestInfo,
): { routes: Route[] } | { code: ErrorCode; message: string } {
  const reject = (code: ErrorCode, message: string) => ({ code, message });
  let routes: Route[] = router.routes(model.id, adapter.protocol);
  // No native channel: channels of another protocol that translate for this one.
  if (routes.length === 0) routes = translatedRoutes(router, model.id, adapter.protocol);
  if (routes.length === 0) {
    const resting = CHAT_PROTOCOLS.some((via) => router.configured(model.id, via, (channel) => channelServes(channel, adapter.protocol)));
    const where = group === null ? '' : ` in the channel group \`${group}\``;
    return reject('no_channel_available', resting ? `Every channel of the model \`${model.id}\`${where} for the ${adapter.protocol} protocol is cooling down or disabled; retry later.` : `The model \`${model.id}\` has no channel${where} for the ${adapter.protocol} protocol.`);
  }
  if (info.builtinTools.length === 0) return { routes };
  // A built-in tool runs on a channel that lists it: natively, or through a translation that carries it.
  const capable = builtinToolRoutes(router, model.id, adapter.protocol, info.builtinTools);
  if (capable.length > 0) return { routes: capable };
  const missing = info.builtinTools.find((tool) => builtinToolRoutes(router, model.id, adapter.protocol, [tool]).length === 0);
  const tools = missing ? `The built-in tool \`${missing}\` is` : `The built-in tools ${info.builtinTools.map((t) => `\`${t}\``).join(' and ')} together are`;
  return reject('tool_not_supported', `${tools} not supported for the model \`${model.id}\` on the ${adapter.protocol} protocol.`);
}

async function send(
  deps: RelayDeps,
  adapter: ProtocolAdapter,
  route: Route,
  request: FastifyRequest,
  info: ChatRequestInfo,
  call: CallSignal,
  traced: UpstreamAttempt | null,
): Promise<{ response: Dispatcher.ResponseData } | { failure: Failure }> {
  const { path, body } = adapter.upstream(request.body, info, route.upstreamModel);
  // Shaped by the channel's config (src/upstream/shaping.ts): path, query, auth header, extra headers.
  const headers: Record<string, string> = { 'content-type': 'application/json', ...shapedHeaders(route.channel, adapter.authHeaders(route.channel.api_key)) };
  for (const entry of adapter.forwardedHeaders) {
    const [from, to] = typeof entry === 'string' ? [entry, entry] : entry;
    const value = request.headers[from];
    if (value !== undefined) headers[to] = Array.isArray(value) ? value.join(',') : value;
  }
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
    if (response.statusCode >= 400) return { failure: await statusFailure(response.statusCode, response.headers, response.body, scrubberOf(route.channel)) };
    return { response };
  } catch (error) {
    return { failure: classify(error, call) };
  }
}

function relayBody(
  text: string,
  response: Dispatcher.ResponseData,
  adapter: ProtocolAdapter,
  reply: FastifyReply,
  estimate: Usage,
  bounds: UsageBounds,
  settle: Settle,
  translation: Translation | null = null,
) {
  const json = tryJson(text);
  const report = checkUsage(adapter.usageOf(json), bounds);
  const invalid = isInvalidUsage(report) ? report.invalid : null;
  // No (believable) usage in a complete answer: bill the estimated prompt and the characters of the
  // text it delivered (not of its JSON).
  const usage = report !== null && !isInvalidUsage(report) ? report : { ...estimate, outputTokens: tokensFromChars(deliveredChars(json)) };
  // Translated: the answer in the client's protocol (billed on the channel's own usage). A
  // translation that throws is a 500, released unbilled by relayChat.
  const answer = translation ? JSON.stringify(translation.answer(json)) : text;
  const type = translation ? 'application/json' : response.headers['content-type'];
  // Queued as the answer leaves, in the same turn of the event loop: no later request (the
  // client's next one, a balance read) can be handled before the wallet has it. What it captures
  // is the cost header, exactly (a stream's headers leave before its cost is known).
  const captured = settle(usage, 'success', undefined, invalid);
  reply.header(COST_HEADER, formatUsd(captured));
  return reply.code(200).type(typeof type === 'string' ? type : 'application/json').send(answer);
}

async function relayStream(
  /** The upstream body, or what reads it ahead. */
  body: AsyncIterable<unknown>,
  adapter: ProtocolAdapter,
  info: ChatRequestInfo,
  request: FastifyRequest,
  reply: FastifyReply,
  estimate: Usage,
  bounds: UsageBounds,
  /** Output characters past which the upstream is cut and the stream ended as a length stop. */
  charsLimit: number,
  settle: Settle,
  call: CallSignal,
  translation: Translation | null = null,
  /** The channel's credentials taken out of its error frames (src/upstream/scrub.ts). */
  scrub: Scrub = scrubKeyShaped,
) {
  // Translated: the channel's stream is watched by its own protocol's observer (usage, end) and
  // converted event by event into the client's protocol.
  const observer = (translation?.adapter ?? adapter).observe(info, request.body);
  const bridge = translation?.bridge() ?? null;
  const framing = adapter.clientFraming?.(request.query as Record<string, unknown>) ?? 'sse';
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    'content-type': framing === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/json; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-gateway-trace': request.id,
    ...(reply.getHeaders() as Record<string, string>),
  });
  const client = new ClientStream(raw, call);
  let elements = 0;
  let stray = '';
  let strayForwarded = false;
  let oversized = false;
  // Set once the upstream went on past the output bound: nothing more of it is relayed.
  let cut = false;
  const element = (data: string) => `${elements++ === 0 ? '[' : ',\r\n'}${data}`;
  const meter = request.callMeter;
  const write = (event: StreamEvent) => {
    meter?.firstByte();
    client.write(framing === 'sse' ? sse(event) : element(event.data));
  };
  const flushStray = () => {
    if (stray === '') return;
    // Outside the framing only an error object is forwarded: the upstream's text, never model output.
    const text = scrub(stray);
    stray = '';
    if (!observer.onStray?.(text) || client.gone) return;
    strayForwarded = true;
    // Translated: a bare error object is an event of the channel's protocol like any other.
    if (bridge) for (const event of bridge.push({ event: undefined, data: text.trim() })) write(event);
    else client.write(framing === 'sse' ? text : element(text.trim()));
  };
  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    // Lines that are no SSE field: kept together and offered to the adapter as one piece.
    onError(error) {
      if (error.type === 'unknown-field' && stray.length < 65_536) stray += `${error.line}\n`;
      if (error.type === 'max-buffer-size-exceeded') oversized = true;
    },
    onEvent(event) {
      if (cut) return;
      flushStray();
      const forwarded = scrubbedFrame({ event: event.event, data: event.data }, scrub);
      const before = observer.outputChars();
      const keep = observer.onEvent(forwarded);
      // The event that passes the bound is not relayed: an upstream cannot push one huge event through.
      if (observer.outputChars() > charsLimit) {
        cut = true;
        return;
      }
      // The output this event added is delivered with the client's next write.
      client.carry(observer.outputChars() - before);
      if (client.gone) return;
      // The bridge sees every event (the usage chunk the gateway asked for included).
      if (bridge) for (const out of bridge.push(forwarded)) write(out);
      else if (keep) write(forwarded);
    },
  });
  const decoder = new TextDecoder();
  let broken: string | null = null;
  try {
    for await (const chunk of body) {
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      if (oversized) throw new Error(`an upstream event exceeded ${MAX_EVENT_CHARS} characters`);
      // Back-pressure: the next upstream chunk is read once the client has taken this one's events.
      await client.drained();
      if (client.gone || cut) break;
    }
    if (cut && !client.gone) {
      // Leaving the loop closed the upstream's body; the client gets its protocol's length stop.
      for (const event of observer.lengthStop()) {
        observer.onEvent(event);
        if (bridge) for (const out of bridge.push(event)) write(out);
        else write(event);
      }
    } else if (!client.gone) {
      parser.feed(decoder.decode());
      parser.reset({ consume: true });
      // @google/genai recognises a bare error object only as a network read of its own:
      // let what went before leave first, as the upstream did.
      if (stray !== '' && framing === 'sse') await sleep(STRAY_GAP_MS);
      flushStray();
    }
  } catch (error) {
    broken = client.gone ? null : call.expired ? 'upstream_timeout' : call.shuttingDown ? 'gateway_shutting_down' : 'upstream_error';
    void error;
  }
  meter?.streamEnded();
  // The client protocol's terminator, written only when the channel's stream finished.
  if (bridge && !client.gone && broken === null) {
    try {
      for (const event of bridge.end()) write(event);
    } catch (error) {
      request.log.error({ err: error }, 'the end of a translated stream could not be converted');
      broken = 'internal_error';
    }
  }
  const finished = observer.completed() && broken === null && !client.gone;
  if (broken === 'gateway_shutting_down') await writeShutdownFrame(client, adapter, framing, elements);
  else if (!finished && framing === 'sse') for (const event of adapter.failureTail?.(info) ?? []) client.write(sse(event));
  // A JSON array is closed only when the stream really ended: a cut stays visibly cut.
  // An in-protocol error element ends the array as the upstream ended it, cleanly.
  const errorEnded = broken === null && (strayForwarded || (bridge?.canonical.some((e) => e.type === 'error') ?? false));
  if (framing === 'json-array' && (finished || errorEnded)) client.write(elements === 0 ? '[]' : ']');
  // Billed once the socket took the end (at once, normally) or the client is gone.
  const delivered = await client.end();
  if (!delivered) broken ??= call.shuttingDown ? 'gateway_shutting_down' : client.stalled ? 'client_timeout' : 'client_disconnected';
  const report = checkUsage(observer.usage(), bounds);
  const invalid = isInvalidUsage(report) ? report.invalid : null;
  const usage = streamUsage({
    estimate,
    reported: report !== null && !isInvalidUsage(report) ? report : null,
    observedChars: observer.outputChars(),
    acceptedChars: client.acceptedChars,
    delivered,
    toolCalls: observer.toolCalls?.(),
  });
  if (finished && delivered) settle(usage, 'success', cut ? OUTPUT_CUT : undefined, invalid);
  else {
    const code = broken ?? 'upstream_error';
    settle(usage, 'interrupted', { code, message: STREAM_ENDS[code] ?? 'the stream ended before its terminator' }, invalid);
  }
  return reply;
}

/** The call-log message of the ways a stream can end early other than the upstream's. */
const STREAM_ENDS: Readonly<Record<string, string>> = {
  client_disconnected: 'the client disconnected',
  client_timeout: 'the client did not read the stream within the request budget',
  internal_error: 'the gateway could not convert the end of the stream',
  gateway_shutting_down: 'the gateway shut down before the stream finished (SHUTDOWN_GRACE_S ran out)',
};
