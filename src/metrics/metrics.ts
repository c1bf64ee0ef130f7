import { PaymentMetrics } from './payments';
import { Counter, Histogram, Registry } from 'prom-client';
import type { CallRecord } from '../events/catalog';
import type { RunOutcome } from '../jobs/port';
import type { PinOutcome } from '../channels/session-pins';
import { ChannelStateMetrics, type ChannelStateSource } from './channel-state';
import { processRegistry } from './process';
import { scrapedGauges, type MetricSources } from './scraped';

export type { MetricSources } from './scraped';

/** How one upstream attempt ended: `ok` (an answer began), or why it failed. */
export type AttemptResult = 'ok' | 'timeout' | 'unreachable' | 'unreadable' | 'rate_limited' | 'credentials' | 'client_error' | 'server_error' | 'shutdown';

export interface MetricsOptions {
  /** The catalogue id a call's model text names (an id or an alias), else undefined: model labels
   * are catalogue ids only, never a client's free text. */
  readonly catalogueId?: (model: string) => string | undefined;
  /** The event store engine (a constant label of the append metrics). */
  readonly engine?: string;
  /** Told of a scrape-time read that failed (the gauges keep their last values). */
  readonly onError?: (error: unknown) => void;
  /** Scrape-time reads are reused for this long (default 1 s): a flood of scrapes costs the database
   * at most one round of reads a second. */
  readonly sampleMs?: number;
}

/** Seconds: a call may last the spec's 180 s. */
const CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180];
/** Seconds: the gateway's own share of a call, and an append, are in the sub-millisecond range. */
const FAST_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180];
/** Seconds: a job run is one upstream poll (its time limit 30 s) or one expiry. */
const JOB_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const JOB_OUTCOMES: readonly RunOutcome[] = ['done', 'again', 'retry', 'dropped'];
/** Commands per append (the command handler batches at most 256). */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/** Label for a model text that names no catalogue model. */
export const UNKNOWN_MODEL = 'unknown';
/** Distinct error codes kept as labels; past them, `other` (every code is the gateway's own, so
 * this is a backstop, not a limit met in practice). */
const MAX_CODES = 64;

type Observe = (value: number) => void;

/** The histograms of one endpoint and model, bound once. */
interface CallSeries {
  readonly duration: Observe;
  readonly firstByte: Observe;
  readonly upstream: Observe;
  readonly overhead: Observe;
}

/** What a finished call tells the metrics (see CallMeter). */
export interface CallTimings {
  /** From the request's arrival to its call record, seconds. */
  readonly total: number;
  /** To the first byte of the answer; null when no answer was relayed (a refusal, an error). */
  readonly firstByte: number | null;
  /** Time spent waiting on upstreams; null when no upstream was asked. */
  readonly upstream: number | null;
  /** The billed amount, nano-USD. */
  readonly cost: bigint;
  /** What the call's price came to beyond its capture bound, not billed (nano-USD); absent: 0. */
  readonly uncharged?: bigint;
}

/** The counters of one route, per method and status, bound as they are first met. */
export class RouteSeries {
  private readonly byStatus = new Map<number, { inc: (value?: number) => void }>();
  private readonly duration: Observe;

  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly method: string,
    private readonly route: string,
  ) {
    this.duration = metrics.httpDuration.labels(method, route).observe;
  }

  /** A response ended (`status` 499: the client closed the connection before it ended). */
  responded(status: number, seconds: number): void {
    let counter = this.byStatus.get(status);
    if (!counter) {
      counter = this.metrics.httpRequests.labels(this.method, this.route, String(status));
      this.byStatus.set(status, counter);
    }
    counter.inc();
    this.duration(seconds);
  }

  replayed(): void {
    this.metrics.idempotencyReplays.inc({ route: this.route });
  }
}

/**
 * The metrics of one gateway instance, in a registry of its own (never prom-client's global
 * default: a process may hold several gateways, as the tests do). Every metric of the gateway is
 * registered here; the rest of the code calls the recorders below (or a CallMeter / RouteSeries
 * they hand out), never prom-client itself. Node's process metrics are the process's, in one
 * registry per process (src/metrics/process.ts), appended to every scrape.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  /** Payment webhooks (src/metrics/payments.ts). */
  readonly payments = new PaymentMetrics(this.registry);

  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly idempotencyReplays: Counter<'route'>;
  private readonly calls: Counter<'endpoint' | 'model' | 'outcome' | 'code'>;
  private readonly callDuration: Histogram<'endpoint' | 'model'>;
  private readonly callFirstByte: Histogram<'endpoint' | 'model'>;
  private readonly callUpstream: Histogram<'endpoint' | 'model'>;
  private readonly callOverhead: Histogram<'endpoint' | 'model'>;
  private readonly tokens: Counter<'model' | 'kind'>;
  private readonly cost: Counter<'model'>;
  private readonly uncharged: Counter<'model'>;
  private readonly capped: Counter<'model'>;
  private readonly attempts: Counter<'channel' | 'result'>;
  private readonly failovers: Counter<'channel' | 'cause'>;
  private readonly sessionPins: Counter<'outcome'>;
  private readonly rateLimitRefusals: Counter<'limit'>;
  private readonly appendDuration: Histogram<'engine'>;
  private readonly appendCommands: Histogram<'engine'>;
  private readonly appendFailures: Counter<'engine' | 'reason'>;
  private readonly jobRuns: Counter<'job' | 'outcome'>;
  private readonly jobSeconds: Histogram<'job'>;
  private readonly jobNames = new Set<string>();

  private readonly catalogueId: (model: string) => string | undefined;
  private readonly engine: string;
  private readonly series = new Map<string, Map<string, CallSeries>>();
  private readonly codes = new Set<string>();
  private readonly appendSeconds: Observe;
  private readonly appendBatch: Observe;

  constructor(sources: MetricSources = {}, options: MetricsOptions = {}) {
    const registers = [this.registry];
    const onError = options.onError ?? (() => {});
    this.catalogueId = options.catalogueId ?? (() => undefined);
    this.engine = options.engine ?? 'unknown';
    const sampleMs = options.sampleMs ?? 1000;

    this.httpRequests = new Counter({
      name: 'gateway_http_requests_total',
      help: 'HTTP requests by method, route pattern (`unmatched` when no route matched) and status; 499: a billable request whose client closed the connection before the response ended.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'gateway_http_request_duration_seconds',
      help: 'From the request to the end of its response (or the client closing it), by method and route pattern.',
      labelNames: ['method', 'route'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.calls = new Counter({
      name: 'gateway_calls_total',
      help: 'Billable calls by endpoint (the call log\'s: the client protocol, or images.*), catalogue model (`unknown`: the request named none), outcome (the call log\'s status) and error code (`none` on success).',
      labelNames: ['endpoint', 'model', 'outcome', 'code'],
      registers,
    });
    const callHistogram = (name: string, help: string, buckets = CALL_BUCKETS) =>
      new Histogram({ name, help, labelNames: ['endpoint', 'model'], buckets, registers });
    this.callDuration = callHistogram('gateway_call_duration_seconds', 'A billable call from its request to its outcome (a stream: to its end), every outcome.');
    this.callFirstByte = callHistogram(
      'gateway_call_first_byte_seconds',
      'From the request to the first byte of the answer (a stream: its first event written to the client), calls that relayed an answer.',
    );
    this.callUpstream = callHistogram(
      'gateway_call_upstream_seconds',
      'Time a call spent on upstream requests (every attempt; a stream until its end was relayed), calls that reached an upstream.',
    );
    this.callOverhead = callHistogram(
      'gateway_call_overhead_seconds',
      "The gateway's own share of a call: total minus upstream time, calls that reached an upstream.",
      FAST_BUCKETS,
    );
    this.tokens = new Counter({
      name: 'gateway_tokens_total',
      help: 'Tokens billed, by catalogue model and kind (input, output, cached; cached is part of input).',
      labelNames: ['model', 'kind'],
      registers,
    });
    this.cost = new Counter({
      name: 'gateway_cost_usd_total',
      help: 'Amount billed for calls, in USD, by catalogue model (a float: the ledger holds the exact amounts).',
      labelNames: ['model'],
      registers,
    });
    this.uncharged = new Counter({
      name: 'gateway_uncharged_usd_total',
      help: "What calls' prices came to beyond their capture bound (a chat call: 4 × its hold), not billed, in USD, by catalogue model: an upstream that reports more than the request could cause.",
      labelNames: ['model'],
      registers,
    });
    this.capped = new Counter({
      name: 'gateway_capped_captures_total',
      help: 'Calls whose capture was cut to their bound (the part beyond it in gateway_uncharged_usd_total), by catalogue model.',
      labelNames: ['model'],
      registers,
    });
    this.attempts = new Counter({
      name: 'gateway_upstream_attempts_total',
      help: 'Upstream requests by channel and result: ok (an answer began), timeout, unreachable, unreadable, rate_limited (429), credentials (the channel\'s own key refused: 401/403, Gemini\'s API_KEY_INVALID), client_error (other 4xx), server_error (5xx), shutdown.',
      labelNames: ['channel', 'result'],
      registers,
    });
    this.failovers = new Counter({
      name: 'gateway_upstream_failovers_total',
      help: 'A failed attempt followed by one on the next channel, by the channel that failed and why.',
      labelNames: ['channel', 'cause'],
      registers,
    });
    this.sessionPins = new Counter({
      name: 'gateway_session_pins_total',
      help: 'Answered chat calls that named a session (session_id / conversation_id header, prompt_cache_key, Claude Code\'s metadata.user_id), by outcome: hit (the channel it was pinned to answered), moved (another channel did: the pinned one failed or was not usable), new (no pin yet, or it had expired or been evicted).',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['hit', 'moved', 'new']) this.sessionPins.inc({ outcome }, 0);
    this.rateLimitRefusals = new Counter({
      name: 'gateway_rate_limit_refusals_total',
      help: 'Requests refused with 429 by an account\'s own limits, by the limit exceeded: requests (rpm), concurrency, or both.',
      labelNames: ['limit'],
      registers,
    });
    for (const limit of ['requests', 'concurrency', 'both']) this.rateLimitRefusals.inc({ limit }, 0);
    this.idempotencyReplays = new Counter({
      name: 'gateway_idempotency_replays_total',
      help: 'Answers replayed for a repeated Idempotency-Key (Idempotency-Replayed: true), by route pattern.',
      labelNames: ['route'],
      registers,
    });
    this.appendDuration = new Histogram({
      name: 'gateway_event_store_append_seconds',
      help: 'Event store appends, from the call to its acknowledgement (a commit, durable or not).',
      labelNames: ['engine'],
      buckets: FAST_BUCKETS,
      registers,
    });
    this.appendCommands = new Histogram({
      name: 'gateway_event_store_append_commands',
      help: 'Commands whose events one append carried: the group-commit batch size.',
      labelNames: ['engine'],
      buckets: BATCH_BUCKETS,
      registers,
    });
    this.appendFailures = new Counter({
      name: 'gateway_event_store_append_failures_total',
      help: 'Appends that failed: conflict (another writer moved the stream; the command is decided again) or error.',
      labelNames: ['engine', 'reason'],
      registers,
    });
    for (const reason of ['conflict', 'error']) this.appendFailures.inc({ engine: this.engine, reason }, 0);
    this.jobRuns = new Counter({
      name: 'gateway_jobs_total',
      help: 'Background job runs (media task polls), by job name and outcome: done (removed), again (rescheduled itself, or given back by a shutdown), retry (threw; runs again after a back-off), dropped (failed too often in a row).',
      labelNames: ['job', 'outcome'],
      registers,
    });
    this.jobSeconds = new Histogram({
      name: 'gateway_job_run_seconds',
      help: 'How long one run of a background job took, by job name, every outcome.',
      labelNames: ['job'],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.appendSeconds = this.appendDuration.labels(this.engine).observe;
    this.appendBatch = this.appendCommands.labels(this.engine).observe;

    scrapedGauges(this.registry, sources, onError, sampleMs);
  }

  /** The text exposition format. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** This gateway's metrics, then the process's. */
  async render(): Promise<string> {
    const [own, process] = await Promise.all([this.registry.metrics(), processRegistry().metrics()]);
    return own + process;
  }

  /** The model label of a call's model text. */
  modelLabel(model: string): string {
    return this.catalogueId(model) ?? UNKNOWN_MODEL;
  }

  /** The counters of a route pattern (`unmatched` when none matched). */
  route(method: string, route: string): RouteSeries {
    return new RouteSeries(this, method, route);
  }

  /** A billable call's outcome: once per call, from its call record. */
  call(record: CallRecord, timings: CallTimings): void {
    const model = this.modelLabel(record.model);
    this.calls.inc({ endpoint: record.endpoint, model, outcome: record.status, code: this.codeLabel(record.error_code) });
    const series = this.seriesOf(record.endpoint, model);
    series.duration(timings.total);
    if (timings.firstByte !== null) series.firstByte(timings.firstByte);
    if (timings.upstream !== null) {
      series.upstream(timings.upstream);
      series.overhead(Math.max(0, timings.total - timings.upstream));
    }
    if (record.input_tokens > 0) this.tokens.inc({ model, kind: 'input' }, record.input_tokens);
    if (record.output_tokens > 0) this.tokens.inc({ model, kind: 'output' }, record.output_tokens);
    if (record.cached_tokens > 0) this.tokens.inc({ model, kind: 'cached' }, record.cached_tokens);
    if (timings.cost > 0n) this.cost.inc({ model }, Number(timings.cost) / 1e9);
    if (timings.uncharged !== undefined && timings.uncharged > 0n) {
      this.uncharged.inc({ model }, Number(timings.uncharged) / 1e9);
      this.capped.inc({ model });
    }
  }

  /** Channel health from this instance's board (src/metrics/channel-state.ts); once per gateway. */
  channelStates(board: ChannelStateSource, channelIds: () => readonly string[]): ChannelStateMetrics {
    return new ChannelStateMetrics(this.registry, board, channelIds);
  }

  upstreamAttempt(channel: string, result: AttemptResult): void {
    this.attempts.inc({ channel, result });
  }

  failover(channel: string, cause: AttemptResult): void {
    this.failovers.inc({ channel, cause });
  }

  /** A session's call answered (src/channels/session-pins.ts). */
  sessionPinned(outcome: PinOutcome): void {
    this.sessionPins.inc({ outcome });
  }

  /** A 429 of the account's own limits. */
  rateLimited(exceeded: readonly string[]): void {
    this.rateLimitRefusals.inc({ limit: exceeded.length > 1 ? 'both' : (exceeded[0] ?? 'requests') });
  }

  /** An append acknowledged after `seconds`, carrying the events of `commands` commands. */
  appended(seconds: number, commands: number): void {
    this.appendSeconds(seconds);
    this.appendBatch(commands);
  }

  /** A background job's run ended (the job queue's onRun hook). Job names are the code's own: bounded. */
  jobRun(job: string, outcome: RunOutcome, ms: number): void {
    if (!this.jobNames.has(job)) {
      this.jobNames.add(job);
      // Every outcome shows from the first run, 0 until it happens (an alert on `dropped` has a series).
      for (const other of JOB_OUTCOMES) this.jobRuns.inc({ job, outcome: other }, 0);
    }
    this.jobRuns.inc({ job, outcome });
    this.jobSeconds.observe({ job }, ms / 1000);
  }

  appendFailed(conflict: boolean): void {
    this.appendFailures.inc({ engine: this.engine, reason: conflict ? 'conflict' : 'error' });
  }

  private seriesOf(endpoint: string, model: string): CallSeries {
    let byModel = this.series.get(endpoint);
    if (!byModel) {
      byModel = new Map();
      this.series.set(endpoint, byModel);
    }
    let series = byModel.get(model);
    if (!series) {
      series = {
        duration: this.callDuration.labels(endpoint, model).observe,
        firstByte: this.callFirstByte.labels(endpoint, model).observe,
        upstream: this.callUpstream.labels(endpoint, model).observe,
        overhead: this.callOverhead.labels(endpoint, model).observe,
      };
      byModel.set(model, series);
    }
    return series;
  }

  private codeLabel(code: string | null): string {
    if (code === null) return 'none';
    if (this.codes.has(code)) return code;
    if (this.codes.size >= MAX_CODES) return 'other';
    this.codes.add(code);
    return code;
  }
}
