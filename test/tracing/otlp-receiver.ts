import { createServer, type IncomingMessage, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';

/** A span as an OTLP/HTTP JSON export carries it, attributes flattened into an object. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  readonly events: readonly { name: string; attributes: Record<string, unknown> }[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error */
  readonly status: { code: number; message?: string };
  readonly resource: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

const valueOf = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;

const attributesOf = (list: OtlpAttributes) => Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));

/**
 * An OTLP/HTTP receiver for tests: a real HTTP server taking the exporter's posts to `/v1/traces`
 * (JSON, as `@opentelemetry/exporter-trace-otlp-http` sends them), decoding every span.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Content types of the posts received. */
  readonly contentTypes: string[] = [];
  /** When set, every post is refused with this status (its spans are not kept). */
  failWith: number | null = null;
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver;
    const server = createServer((request, response) => {
      read(request).then(
        (body) => {
          if (request.method !== 'POST' || request.url !== '/v1/traces') {
            response.writeHead(404).end();
            return;
          }
          if (receiver.failWith !== null) {
            response.writeHead(receiver.failWith, { 'content-type': 'application/json' }).end('{"code":3,"message":"refused by the test"}');
            return;
          }
          receiver.take(String(request.headers['content-type']), body);
          response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        },
        () => response.writeHead(400).end(),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`);
    return receiver;
  }

  private take(contentType: string, body: Buffer) {
    this.contentTypes.push(contentType);
    const request = JSON.parse(body.toString('utf8')) as {
      resourceSpans: { resource?: { attributes?: OtlpAttributes }; scopeSpans: { spans: Record<string, unknown>[] }[] }[];
    };
    for (const { resource, scopeSpans } of request.resourceSpans)
      for (const { spans } of scopeSpans)
        for (const span of spans)
          this.spans.push({
            traceId: span.traceId as string,
            spanId: span.spanId as string,
            parentSpanId: (span.parentSpanId as string | undefined) ?? '',
            name: span.name as string,
            kind: span.kind as number,
            attributes: attributesOf(span.attributes as OtlpAttributes),
            events: ((span.events as { name: string; attributes?: OtlpAttributes }[] | undefined) ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
            status: (span.status as { code?: number; message?: string } | undefined)?.code !== undefined ? (span.status as { code: number; message?: string }) : { code: 0 },
            resource: attributesOf(resource?.attributes),
          });
  }

  /** The spans of one trace once `done` says they are all there (polled; a generous deadline). */
  async trace(traceId: string, done: (spans: ReceivedSpan[]) => boolean, timeoutMs = 15_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const spans = this.spans.filter((s) => s.traceId === traceId);
      if (done(spans)) return spans;
      if (Date.now() > deadline) throw new Error(`trace ${traceId}: only ${spans.map((s) => s.name).join(', ') || 'no spans'} arrived`);
      await sleep(20);
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function read(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return request.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}
