import type { ServerResponse } from 'node:http';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from '@opentelemetry/semantic-conventions';
import type { FastifyRequest } from 'fastify';
import { formatUsd } from '../money/usd';
import type { Route } from '../channels/routing';
import type { Failure } from '../upstream/upstream-call';
import type { Outcome, RequestTrace, SettlementFacts, UpstreamAttempt } from './request';
import { traceparentOf, tracestateOf } from './traceparent';

// The GenAI conventions are still "development": their names are written here, not imported from
// the package's incubating entry (the package's own advice).
const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
const GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
const GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';

function failed(span: Span, error: unknown) {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  span.end();
}

function endReservation(span: Span, result: Outcome & { readonly holdId?: string }) {
  if (result.holdId !== undefined) span.setAttribute('gateway.hold_id', result.holdId);
  if (result.ok) span.setAttribute('gateway.outcome', 'held');
  else span.setAttributes({ 'gateway.outcome': 'refused', 'gateway.refusal': result.error?.code ?? 'unknown' });
  span.end();
}

const servers = new Map<string, { address: string; port: number }>();

function serverOf(baseUrl: string) {
  let server = servers.get(baseUrl);
  if (!server) {
    const url = new URL(baseUrl);
    server = { address: url.hostname, port: url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 };
    // Base URLs come from the config: a handful.
    servers.set(baseUrl, server);
  }
  return server;
}

/** The span of one request and the child spans of its call; all children's parent is the request span. */
export class CallTrace implements RequestTrace {
  /** Attempts still open: they end with the request at the latest (one cut short by an exception or
   * a refusal at the hold's commit), since a span never ended is never exported. */
  private readonly unfinished = new Set<Attempt>();

  constructor(
    private readonly tracer: Tracer,
    readonly span: Span,
  ) {}

  child(name: string, attributes?: Attributes, kind: SpanKind = SpanKind.INTERNAL): Span {
    return this.tracer.startSpan(name, { kind, ...(attributes ? { attributes } : {}) }, trace.setSpan(ROOT_CONTEXT, this.span));
  }

  authentication<Done extends (error?: Error) => void>(request: FastifyRequest, done: Done, refusalOf: () => string | undefined): Done {
    const span = this.child('gateway.authenticate');
    return ((error?: Error) => {
      if (error) failed(span, error);
      else {
        const refusal = refusalOf();
        if (refusal) span.setAttributes({ 'gateway.outcome': 'refused', 'gateway.refusal': refusal });
        else span.setAttribute('gateway.outcome', 'admitted');
        span.end();
      }
      const caller = request.caller;
      if (caller) this.span.setAttributes({ 'gateway.account_id': caller.accountId, 'gateway.key_id': caller.keyId });
      done(error);
    }) as Done;
  }

  private reservationSpan(amount: bigint, holdId: string | undefined): Span {
    return this.child('gateway.reserve', { 'gateway.hold.amount_usd': formatUsd(amount), ...(holdId !== undefined ? { 'gateway.hold_id': holdId } : {}) });
  }

  hold<H extends { readonly decided: Promise<Outcome>; readonly committed: Promise<Outcome> }>(facts: { readonly amount: bigint; readonly holdId: string }, reserve: () => H): H {
    const span = this.reservationSpan(facts.amount, facts.holdId);
    const reserved = reserve();
    let committed = false;
    // A commit without an early word settles `decided` too: this handler runs before that one then.
    reserved.committed.then(
      (result) => {
        committed = true;
        endReservation(span, result);
      },
      (error: unknown) => {
        committed = true;
        failed(span, error);
      },
    );
    reserved.decided.then(
      (result) => {
        if (!committed) span.addEvent('decided', { 'gateway.outcome': result.ok ? 'held' : 'refused' });
      },
      () => {},
    );
    return reserved;
  }

  reservation<R extends Outcome & { readonly holdId?: string }>(facts: { readonly amount: bigint; readonly holdId?: string }, reserve: () => Promise<R>): Promise<R> {
    const span = this.reservationSpan(facts.amount, facts.holdId);
    return reserve().then(
      (result) => {
        endReservation(span, result);
        return result;
      },
      (error: unknown) => {
        failed(span, error);
        throw error;
      },
    );
  }

  attempt(route: Route, attempt: number): UpstreamAttempt {
    const server = serverOf(route.channel.base_url);
    const span = this.child(
      'gateway.upstream',
      {
        'gateway.channel': route.channel.id,
        'gateway.channel.protocol': route.channel.protocol,
        'gateway.attempt': attempt,
        [GEN_AI_REQUEST_MODEL]: route.upstreamModel,
        [ATTR_HTTP_REQUEST_METHOD]: 'POST',
        [ATTR_SERVER_ADDRESS]: server.address,
        [ATTR_SERVER_PORT]: server.port,
      },
      SpanKind.CLIENT,
    );
    const opened = new Attempt(span, (done) => this.unfinished.delete(done));
    this.unfinished.add(opened);
    return opened;
  }

  settlement<R extends Outcome>(facts: SettlementFacts, settle: () => Promise<R>): Promise<R> {
    facts.attempt?.end();
    const { record } = facts;
    const span = this.child(facts.amount === undefined ? 'gateway.release' : 'gateway.settle', {
      'gateway.hold_id': facts.holdId,
      'gateway.call.status': record.status,
      [GEN_AI_USAGE_INPUT_TOKENS]: record.input_tokens,
      [GEN_AI_USAGE_OUTPUT_TOKENS]: record.output_tokens,
      ...(facts.amount !== undefined ? { 'gateway.charge_usd': formatUsd(facts.amount) } : {}),
      ...(record.error_code !== null ? { 'gateway.call.error_code': record.error_code } : {}),
    });
    return settle().then(
      (result) => {
        if (!result.ok) {
          const code = result.error?.code ?? 'unknown';
          span.setAttribute('gateway.refusal', code);
          span.setStatus({ code: SpanStatusCode.ERROR, message: `refused: ${code}` });
        }
        span.end();
        return result;
      },
      (error: unknown) => {
        failed(span, error);
        throw error;
      },
    );
  }

  /** The response's connection is done: the request span ends, and what is still open with it. */
  end(raw: ServerResponse): void {
    for (const attempt of this.unfinished) attempt.end();
    const status = raw.statusCode;
    this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    // A server span is an error for a 5xx only: a 4xx is the client's.
    if (status >= 500) {
      this.span.setAttribute(ATTR_ERROR_TYPE, String(status));
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    // The connection closed before the response ended (the client left, or a stream was cut).
    if (!raw.writableFinished) this.span.setAttribute('gateway.response_incomplete', true);
    this.span.end();
  }
}

class Attempt implements UpstreamAttempt {
  private ended = false;

  constructor(
    private readonly span: Span,
    private readonly onEnd: (attempt: Attempt) => void,
  ) {}

  propagate(headers: Record<string, string>): void {
    const context = this.span.spanContext();
    headers.traceparent = traceparentOf(context);
    const state = tracestateOf(context);
    if (state !== undefined) headers.tracestate = state;
  }

  answered(status: number): void {
    this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    this.span.addEvent('response headers');
  }

  failed(failure: Failure): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(this);
    if (failure.kind === 'status') this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, failure.status);
    this.span.setAttribute(ATTR_ERROR_TYPE, failure.kind === 'status' ? String(failure.status) : failure.kind);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: failure.kind === 'status' ? `HTTP ${failure.status}` : failure.message });
    this.span.end();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(this);
    this.span.end();
  }
}
