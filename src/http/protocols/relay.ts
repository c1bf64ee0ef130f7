import type { FastifyReply, FastifyRequest } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import type { Ledger, Result } from '../../commands/ledger';
import type { ModelRegistry } from '../../config/registry';
import type { ModelConfig } from '../../config/schema';
import type { CallRecord } from '../../events/catalog';
import { callableModel, callRecord, failureSummary, refuseHold, rejectCall, type CallFacts } from '../billable-call';
import type { ChatRequestInfo, ProtocolAdapter, StreamEvent, Usage } from '../../upstream/contract';
import { chargeOf, estimateUsage, holdAmount, pricingOf, receiptOf, tokensFromChars, type TokenPricing } from '../../upstream/pricing';
import { checkUsage, isInvalidUsage, usageBounds, usageInvalidNote, type UsageBounds } from '../../upstream/usage';
import type { Route, Router } from '../../upstream/routing';
import { tryJson } from '../../upstream/json';
import { readAhead } from '../../upstream/read-ahead';
import { CallSignal, classify, statusFailure, upstreamAgent, upstreamTarget, type Failure } from '../../upstream/upstream-call';
import { GatewayError, upstreamErrorBody, type ErrorCode } from '../errors';
import { decodeCall, isTranslated, translatedRoutes, translationFor, type DecodedCall, type Translation } from './translated';

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
const HOLD_GRACE_S = 120;
/** Pause before a trailing out-of-framing piece (a bare error object) so it reaches the client on its own. */
const STRAY_GAP_MS = 50;

function sse(event: StreamEvent): string {
  const lines = event.data.split('\n').map((line) => `data: ${line}`).join('\n');
  return `${event.event ? `event: ${event.event}\n` : ''}${lines}\n\n`;
}

interface CallContext extends CallFacts {
  readonly adapter: ProtocolAdapter;
}

/** `invalidUsage`: why the upstream's usage was not believed (the call is then billed on the estimate). */
type Settle = (usage: Usage, status: CallRecord['status'], error?: { code: string; message: string }, invalidUsage?: string | null) => void;

const usageFields = (usage: Usage) => ({ input_tokens: usage.promptTokens, output_tokens: usage.outputTokens, cached_tokens: usage.cachedTokens });

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
  params: { model?: string; stream?: boolean } = {},
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

  const routes = routesFor(deps, adapter, model, info, reject);
  const estimate = estimateUsage(model, info.promptDocument, info.maxTokens);
  const pricing = pricingOf(model, deps.registry.config.discounts);
  const holdId = request.id;
  // The upstream request may leave once the hold is decided; its commit is awaited before
  // anything reaches the client, before a settlement and before another channel is tried.
  const hold = deps.ledger.reserveEarly(caller.accountId, {
    holdId,
    amount: holdAmount(pricing, estimate, ctx.submittedAt),
    keyId: caller.keyId,
    spendCap: caller.key.settings.spend_cap,
    purpose: `chat ${model.id}`,
    ttlSeconds: Math.ceil(deps.timeoutMs / 1000) + HOLD_GRACE_S,
  });
  const decided = await hold.decided;
  if (!decided.ok) return refuseHold(decided.error, reject);

  const signal = new CallSignal(deps.timeoutMs);
  const call: Call = {
    ctx,
    info,
    estimate,
    bounds: usageBounds(model, info),
    pricing,
    holdId,
    signal,
    commit: holdCommit(hold.committed, signal, request, reject),
    translated: routes.some(isTranslated) ? { call: decodeCall(adapter, request.body, params, info, deps.now()), model } : null,
  };
  try {
    return await relayRoutes(deps, adapter, request, reply, routes, call);
  } finally {
    signal.clear();
  }
}

/** What the attempts of one call share. */
interface Call {
  readonly ctx: CallContext;
  readonly info: ChatRequestInfo;
  readonly estimate: Usage;
  readonly bounds: UsageBounds;
  readonly pricing: TokenPricing;
  readonly holdId: string;
  readonly signal: CallSignal;
  readonly commit: HoldCommit;
  readonly translated: { call: DecodedCall; model: ModelConfig } | null;
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

async function relayRoutes(deps: RelayDeps, adapter: ProtocolAdapter, request: FastifyRequest, reply: FastifyReply, routes: readonly Route[], call: Call): Promise<unknown> {
  const caller = request.caller!;
  const { ctx, info, estimate, bounds, pricing, holdId, signal, commit, translated } = call;
  let failure: Failure | null = null;
  let failedAdapter = adapter;
  for (const route of routes) {
    ctx.attempts += 1;
    ctx.channelId = route.channel.id;
    const translation = translated && isTranslated(route) ? translationFor(translated.call, adapter, route, translated.model) : null;
    const routeAdapter = translation?.adapter ?? adapter;
    if (translation) for (const [name, value] of Object.entries(translation.headers)) reply.header(name, value);
    const outcome = await send(deps, routeAdapter, route, request, info, signal);
    // A stream cut while the commit is awaited must not take the frames that came before the cut with it.
    const body = 'response' in outcome ? (info.stream && !commit.known ? readAhead(outcome.response.body) : outcome.response.body) : null;
    await commit.wait().catch((refusal: unknown) => {
      if ('response' in outcome) outcome.response.body.destroy();
      throw refusal;
    });
    if ('failure' in outcome) {
      failure = outcome.failure;
      failedAdapter = routeAdapter;
      // 4xx is the caller's problem (or the key's): another channel would say the same.
      if (failure.kind === 'status' && failure.status < 500) break;
      if (signal.expired) break;
      continue;
    }
    // Settled after the answer has gone out, without making the client wait: the command is
    // queued at once (later reads and reservations of the wallet come after it) and shares
    // its append with the wallet's next commands. A hold whose settlement never lands
    // (the process died) is released by the sweeper: the call is then free, never double-billed.
    const settle: Settle = (usage, status, error, invalidUsage) => {
      const charge = chargeOf(pricing, usage, ctx.submittedAt);
      const note = invalidUsage ? usageInvalidNote(invalidUsage, error) : error ? { error_code: error.code, error_message: error.message } : {};
      if (invalidUsage) request.log.warn({ holdId, channel: route.channel.id, model: ctx.model, reason: invalidUsage }, 'upstream usage invalid: the call is billed on the estimate');
      deps.ledger
        .settle(caller.accountId, holdId, charge.amount, callRecord(ctx, { status, ...usageFields(usage), ...receiptOf(usage, charge), ...note }), true)
        .then((settled) => {
          if (!settled.ok) request.log.error({ holdId, error: settled.error }, 'settlement refused');
        })
        .catch((failure: unknown) => request.log.error({ err: failure, holdId }, 'settlement failed; the hold sweeper will release the hold'));
    };
    if (!info.stream) return relayBody(outcome.response, routeAdapter, reply, estimate, bounds, settle, translation);
    return relayStream(body!, adapter, info, request, reply, estimate, bounds, settle, signal, translation);
  }

  // Every channel failed before an answer started: nothing billed.
  const f = failure ?? { kind: 'unreachable' as const, message: 'no channel could be reached' };
  const { status, code, message } = failureSummary(f, failedAdapter.errorMessage);
  await deps.ledger.release(caller.accountId, holdId, 'upstream failed', callRecord(ctx, { status: 'error', error_code: code, error_message: message }));
  if (f.kind === 'status') {
    if (f.headers['retry-after']) reply.header('retry-after', f.headers['retry-after']);
    return reply.code(status).type('application/json').send(upstreamErrorBody(adapter.shape, status, message));
  }
  throw new GatewayError(code as ErrorCode, message);
}

function routesFor(
  deps: RelayDeps,
  adapter: ProtocolAdapter,
  model: ModelConfig,
  info: ChatRequestInfo,
  reject: (code: ErrorCode, message: string) => never,
): Route[] {
  let routes: Route[] = deps.router.routes(model.id, adapter.protocol);
  // No native channel: channels of another protocol that translate for this one.
  if (routes.length === 0) routes = translatedRoutes(deps.router, model.id, adapter.protocol);
  if (routes.length === 0) return reject('no_channel_available', `The model \`${model.id}\` has no channel for the ${adapter.protocol} protocol.`);
  // A built-in tool runs on the channel's own protocol: translation cannot carry it.
  if (info.builtinTools.length > 0 && routes.some(isTranslated))
    return reject('tool_not_supported', `The built-in tool \`${info.builtinTools[0]}\` is not supported for the model \`${model.id}\` on the ${adapter.protocol} protocol.`);
  for (const tool of info.builtinTools) {
    routes = routes.filter((r) => r.channel.tools.includes(tool));
    if (routes.length === 0) return reject('tool_not_supported', `The built-in tool \`${tool}\` is not supported for the model \`${model.id}\`.`);
  }
  return routes;
}

async function send(
  deps: RelayDeps,
  adapter: ProtocolAdapter,
  route: Route,
  request: FastifyRequest,
  info: ChatRequestInfo,
  call: CallSignal,
): Promise<{ response: Dispatcher.ResponseData } | { failure: Failure }> {
  const { path, body } = adapter.upstream(request.body, info, route.upstreamModel);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...adapter.authHeaders(route.channel.api_key) };
  for (const entry of adapter.forwardedHeaders) {
    const [from, to] = typeof entry === 'string' ? [entry, entry] : entry;
    const value = request.headers[from];
    if (value !== undefined) headers[to] = Array.isArray(value) ? value.join(',') : value;
  }
  try {
    const target = upstreamTarget(route.channel.base_url, path);
    const response = await (deps.dispatcher ?? upstreamAgent).request({
      origin: target.origin,
      path: target.path,
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: call.signal,
      headersTimeout: deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
    });
    if (response.statusCode >= 400) return { failure: await statusFailure(response.statusCode, response.headers, response.body) };
    return { response };
  } catch (error) {
    return { failure: classify(error, call) };
  }
}

async function relayBody(
  response: Dispatcher.ResponseData,
  adapter: ProtocolAdapter,
  reply: FastifyReply,
  estimate: Usage,
  bounds: UsageBounds,
  settle: Settle,
  translation: Translation | null = null,
) {
  let text: string;
  try {
    text = await response.body.text();
  } catch {
    // The body broke off after a 200 status: nothing usable was delivered.
    settle({ ...estimate, outputTokens: 0 }, 'error', { code: 'upstream_error', message: 'the upstream response broke off' });
    throw new GatewayError('upstream_unreachable', 'the upstream connection broke off during the response');
  }
  const json = tryJson(text);
  const report = checkUsage(adapter.usageOf(json), bounds);
  const invalid = isInvalidUsage(report) ? report.invalid : null;
  // No (believable) usage in a complete answer: bill the estimated prompt and the delivered characters.
  const usage = report !== null && !isInvalidUsage(report) ? report : { ...estimate, outputTokens: tokensFromChars(text.length) };
  let answer: string;
  try {
    // Translated: the answer in the client's protocol (billed on the channel's own usage).
    answer = translation ? JSON.stringify(translation.answer(json)) : text;
  } catch (error) {
    settle(usage, 'success', undefined, invalid);
    throw error;
  }
  const type = translation ? 'application/json' : response.headers['content-type'];
  const sent = reply.code(200).type(typeof type === 'string' ? type : 'application/json').send(answer);
  // Queued as the answer leaves, in the same turn of the event loop: no later request (the
  // client's next one, a balance read) can be handled before the wallet has it.
  settle(usage, 'success', undefined, invalid);
  return sent;
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
  settle: Settle,
  call: CallSignal,
  translation: Translation | null = null,
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
  let clientGone = false;
  raw.on('close', () => {
    if (!raw.writableFinished) {
      clientGone = true;
      call.abort();
    }
  });
  let elements = 0;
  let stray = '';
  let strayForwarded = false;
  const write = (event: StreamEvent) => {
    if (framing === 'sse') raw.write(sse(event));
    else raw.write(`${elements++ === 0 ? '[' : ',\r\n'}${event.data}`);
  };
  const flushStray = () => {
    if (stray === '') return;
    const text = stray;
    stray = '';
    if (!observer.onStray?.(text) || clientGone) return;
    strayForwarded = true;
    // Translated: a bare error object is an event of the channel's protocol like any other.
    if (bridge) for (const event of bridge.push({ event: undefined, data: text.trim() })) write(event);
    else if (framing === 'sse') raw.write(text);
    else raw.write(`${elements++ === 0 ? '[' : ',\r\n'}${text.trim()}`);
  };
  const parser = createParser({
    // Lines that are no SSE field: kept together and offered to the adapter as one piece.
    onError(error) {
      if (error.type === 'unknown-field' && stray.length < 65_536) stray += `${error.line}\n`;
    },
    onEvent(event) {
      flushStray();
      const forwarded = { event: event.event, data: event.data };
      const keep = observer.onEvent(forwarded);
      if (clientGone) return;
      // The bridge sees every event (the usage chunk the gateway asked for included).
      if (bridge) for (const out of bridge.push(forwarded)) write(out);
      else if (keep) write(forwarded);
    },
  });
  const decoder = new TextDecoder();
  let broken: string | null = null;
  try {
    for await (const chunk of body) parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
    parser.feed(decoder.decode());
    parser.reset({ consume: true });
    // @google/genai recognises a bare error object only as a network read of its own:
    // let what went before leave first, as the upstream did.
    if (stray !== '' && framing === 'sse' && !clientGone) await sleep(STRAY_GAP_MS);
    flushStray();
  } catch (error) {
    broken = call.expired ? 'upstream_timeout' : clientGone ? 'client_disconnected' : 'upstream_error';
    void error;
  }
  const report = checkUsage(observer.usage(), bounds);
  const invalid = isInvalidUsage(report) ? report.invalid : null;
  const reported = report !== null && !isInvalidUsage(report) ? report : null;
  const delivered = observer.outputChars();
  const usage: Usage = reported ?? { ...estimate, outputTokens: tokensFromChars(delivered) };
  // Never bill a stream at 0 when output was delivered.
  const billed = reported && reported.outputTokens === 0 && delivered > 0 ? { ...reported, outputTokens: tokensFromChars(delivered) } : usage;
  const complete = observer.completed() && broken === null;
  // The client protocol's terminator, written only when the channel's stream finished.
  if (bridge && !clientGone && broken === null) for (const event of bridge.end()) write(event);
  if (!complete && !clientGone && framing === 'sse') for (const event of adapter.failureTail?.(info) ?? []) raw.write(sse(event));
  // A JSON array is closed only when the stream really ended: a cut stays visibly cut.
  // An in-protocol error element ends the array as the upstream ended it, cleanly.
  const errorEnded = broken === null && (strayForwarded || (bridge?.canonical.some((e) => e.type === 'error') ?? false));
  if (framing === 'json-array' && (complete || errorEnded) && !clientGone) raw.write(elements === 0 ? '[]' : ']');
  if (!clientGone) raw.end();
  if (complete) settle(billed, 'success', undefined, invalid);
  else
    settle(
      billed,
      'interrupted',
      { code: broken ?? 'upstream_error', message: broken === 'client_disconnected' ? 'the client disconnected' : 'the stream ended before its terminator' },
      invalid,
    );
  return reply;
}
