import { ROOT_CONTEXT, SpanKind, trace, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  RandomIdGenerator,
  TraceIdRatioBasedSampler,
  type IdGenerator,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_ROUTE,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CallTrace } from './call-trace';
import type { RequestTrace, RequestTracer } from './request';
import type { TracingSettings } from './settings';
import { parseTraceparent } from './traceparent';

type ExporterCompression = NonNullable<NonNullable<ConstructorParameters<typeof OTLPTraceExporter>[0]>['compression']>;

/** What the tracer tells the operator: exports failing (once, when they start to) and working again. */
export interface ExportReport {
  failing(error: unknown): void;
  recovered(): void;
}

/**
 * A request that starts its own trace takes its request id's 32 hex digits as the trace id, so that
 * `x-gateway-trace: req_<id>` names the trace. The tracer asks for a trace id only for a span without
 * a parent, synchronously inside `startSpan`: the id is handed over just before that call.
 */
class RequestTraceIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: string | null = null;

  generateTraceId(): string {
    const id = this.next ?? this.random.generateTraceId();
    this.next = null;
    return id;
  }

  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

/** The exporter, telling the operator when its posts start failing and when they work again. */
class ReportingExporter implements SpanExporter {
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly report: ExportReport,
  ) {}

  export(spans: Parameters<SpanExporter['export']>[0], done: Parameters<SpanExporter['export']>[1]): void {
    this.inner.export(spans, (result) => {
      // ExportResultCode.SUCCESS is 0.
      if (result.code !== 0 && !this.failing) {
        this.failing = true;
        this.report.failing(result.error ?? new Error('the OTLP export failed'));
      } else if (result.code === 0 && this.failing) {
        this.failing = false;
        this.report.recovered();
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

function samplerOf({ name, ratio }: TracingSettings['sampler']): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

const REQUEST_ID = /^req_([0-9a-f]{32})$/;

/** Probes and scrapes: every few seconds each, they would bury the calls. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One gateway instance's tracer: its own provider, exporter and batch (never the process-wide
 * global provider or context manager, so that several gateways in one process, as in the tests,
 * each export their own spans and shut down on their own). Parents are passed explicitly.
 * Loaded (with the SDK) only when tracing is on.
 */
export class GatewayTracer implements RequestTracer {
  private readonly provider: NodeTracerProvider;
  private readonly tracer: Tracer;
  private readonly ids = new RequestTraceIds();

  constructor(settings: TracingSettings, report: ExportReport, version: string) {
    const exporter = new OTLPTraceExporter({
      url: settings.url,
      headers: { ...settings.headers },
      timeoutMillis: settings.timeoutMs,
      // The exporter's enum has exactly these two string values.
      compression: settings.compression as ExporterCompression,
    });
    this.provider = new NodeTracerProvider({
      resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_VERSION]: version, ...settings.resource })),
      sampler: samplerOf(settings.sampler),
      idGenerator: this.ids,
      spanProcessors: [
        new BatchSpanProcessor(new ReportingExporter(exporter, report), {
          scheduledDelayMillis: settings.batch.scheduledDelayMs,
          maxQueueSize: settings.batch.maxQueueSize,
          maxExportBatchSize: settings.batch.maxExportBatchSize,
          exportTimeoutMillis: settings.batch.exportTimeoutMs,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('model-gateway', version);
  }

  /**
   * The request's span: a child of the caller's span when the request came with a usable
   * `traceparent`, else the root of a new trace whose id is the request id's hex digits.
   */
  start(request: FastifyRequest, reply: FastifyReply): RequestTrace | null {
    const route = request.routeOptions.url;
    if (route !== undefined && UNTRACED.has(route)) return null;
    const { method } = request;
    const query = request.url.indexOf('?');
    const agent = request.headers['user-agent'];
    const name = route === undefined ? method : `${method} ${route}`;
    const options = {
      kind: SpanKind.SERVER,
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        // Never the query string: it may hold an API key (`?key=`).
        [ATTR_URL_PATH]: query < 0 ? request.url : request.url.slice(0, query),
        ...(route !== undefined ? { [ATTR_HTTP_ROUTE]: route } : {}),
        [ATTR_CLIENT_ADDRESS]: request.ip,
        ...(agent !== undefined ? { [ATTR_USER_AGENT_ORIGINAL]: agent } : {}),
        'gateway.request_id': request.id,
      },
    };
    const parent = parseTraceparent(request.headers.traceparent, request.headers.tracestate);
    let span;
    if (parent) span = this.tracer.startSpan(name, options, trace.setSpanContext(ROOT_CONTEXT, parent));
    else {
      this.ids.next = REQUEST_ID.exec(request.id)?.[1] ?? null;
      try {
        span = this.tracer.startSpan(name, options, ROOT_CONTEXT);
      } finally {
        this.ids.next = null;
      }
    }
    const call = new CallTrace(this.tracer, span);
    reply.raw.once('close', () => call.end(reply.raw));
    return call;
  }

  /** Exports what is buffered and stops; spans ended later are dropped. */
  close(): Promise<void> {
    return this.provider.shutdown();
  }
}
