import { registerCors, type CorsOrigins, type TrustProxy } from '../http/edge';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { KnowledgeService } from '../commands/knowledge/service';
import type { Ledger } from '../commands/ledger';
import type { ModelRegistry } from '../config/registry';
import type { EventStore, Position } from '../events/store/port';
import type { RateLimiter } from '../limits';
import type { HostedOutputs } from '../objects/hosted';
import type { ObjectStore } from '../objects/store';
import type { KnowledgeQueries } from '../projections/knowledge/queries';
import type { Enterprises } from '../commands/enterprise/service';
import { agentKeyGate } from '../http/agents/gate';
import { SessionPins } from '../channels/session-pins';
import type { ProjectionRunner } from '../projections/runner/runner';
import type { GatewayMetrics } from '../metrics/metrics';
import { metricsPlugin } from '../metrics/http';
import type { Sql } from '../storage/sql';
import { adminRoutes } from '../http/admin/routes';
import { UnreadableEventError } from '../events/catalog';
import { failureOf, GatewayError, sendError, unavailable } from '../http/errors';
import { authPlugin } from '../http/plugins/auth';
import { rateLimitPlugin } from '../http/plugins/rate-limit';
import { idempotencyPlugin } from '../http/plugins/idempotency';
import { refusedCallsPlugin } from '../http/plugins/refused-calls';
import { requestIdPlugin, setRequestIdHeader } from '../http/plugins/request-id';
import type { IdempotencyStore } from '../idempotency/store';
import { balanceRoutes } from '../http/resources/balance';
import { mcpRoutes } from '../http/resources/mcp';
import { usageRoutes } from '../http/resources/usage';
import { wikiRoutes } from '../http/resources/wiki';
import { chatRoutes } from '../http/protocols/routes';
import { responsesSocketRoutes } from '../http/protocols/responses-socket';
import { RESPONSES_SOCKET_DEFAULTS, type ResponsesSocketSettings } from '../http/protocols/responses-socket-settings';
import { CHAT_TIMEOUT_MS } from '../http/protocols/relay';
import { Router } from '../channels/routing';
import { ChannelBoard } from '../channels/board';
import { healthPolicyOf } from '../channels/health';
import type { ChannelHealthAdmin } from '../channels/admin';
import { modelRoutes } from '../http/resources/models';
import { geminiModelRoutes } from '../http/resources/gemini-models';
import { embeddingsRoutes } from '../http/resources/embeddings';
import { imageRoutes, type ImageTimings } from '../http/media/images/images';
import { hostedFileRoutes } from '../http/media/hosted/files';
import { videoRoutes } from '../http/media/video/videos';
import { clipTemplateRoutes } from '../http/media/video/clip-templates';
import { ClipTemplates } from '../clip/templates';
import { NO_MEDIA_PROBE, type UrlProbe } from '../media-check/port';
import { avatarRoutes } from '../http/media/video/avatars';
import { speechRoutes } from '../http/media/speech/speech';
import type { SpeechTimings } from '../http/media/speech/speech-calls';
import { voiceRoutes } from '../http/media/speech/voices';
import { musicRoutes } from '../http/media/music/music';
import { musicAssetRoutes } from '../http/media/music/music-assets';
import { TRANSCRIPT_TIMINGS, transcriptRoutes, type TranscriptTimings } from '../http/media/speech/transcripts';
import { TASK_SUBMIT_TIMEOUT_MS } from '../http/media/tasks/task-submit';
import type { TaskService } from '../commands/task/service';
import type { TaskQueries } from '../projections/tasks/queries';
import type { TaskWorkflows } from '../tasks/workflows';
import { clientErrorOf, INTAKE_TIMINGS, intakePlugin, notFound, sendByPath, serverOptions, type IntakeTimings } from '../http/intake/plugin';
import { redactUrl } from '../metrics/redact';
import { tracingPlugin, type RequestTracer } from '../tracing/request';
import type { Drain } from '../lifecycle/drain';
import { drainPlugin } from '../http/plugins/lifecycle';
import { openApiPlugin } from '../http/openapi/plugin';
import { consoleRoutes } from '../console/routes';
import { billingRoutes } from '../http/resources/billing';
import { stripeWebhookRoutes } from '../http/resources/stripe-webhook';
import type { PaymentsSetup } from '../payments/setup';
import type { ConsoleSessions } from '../console/sessions';
import type { Logins } from '../accounts/logins';
import type { PasswordSignIn } from '../accounts/password-sign-in';
import type { EmailChanges } from '../accounts/email-change';
import type { SignUps } from '../accounts/sign-up';
import { signUpRoutes } from '../http/resources/sign-up';

export { redactUrl };

export interface AppDeps {
  readonly ledger: Ledger;
  readonly runner: ProjectionRunner;
  readonly sql: Sql;
  readonly store: EventStore;
  readonly registry: ModelRegistry;
  readonly adminToken: string;
  readonly knowledge: KnowledgeService;
  readonly knowledgeQueries: KnowledgeQueries;
  /** Enterprises, agents and agent keys (src/commands/enterprise, src/http/agents). */
  readonly enterprises: Enterprises;
  readonly objects: ObjectStore;
  /** Media outputs the gateway hosts; their download route is served with the local store. */
  readonly hosted: HostedOutputs;
  /** Where the files of multipart image edits wait on disk while their call runs (DATA_DIR/uploads). */
  readonly uploadsDir: string;
  /** The most bytes those files may take at once (UPLOAD_SPOOL_LIMIT_MB); default 1024 MB. */
  readonly uploadSpoolLimit?: number;
  /** Media tasks: their commands, their views, and what moves them outside requests. */
  readonly tasks: TaskService;
  readonly taskQueries: TaskQueries;
  readonly workflows: TaskWorkflows;
  /** The upstream's time limit for accepting a media task; the spec's 60 s unless a test shortens it. */
  readonly taskSubmitTimeoutMs?: number;
  /** Probing of media URLs named in bodies (digital humans, clips); default none: every URL passed on. */
  readonly mediaProbe?: UrlProbe;
  /** How long a transcript request waits (the spec's 55 s) and how often it polls; shorter in tests. */
  readonly transcriptTimings?: Partial<TranscriptTimings>;
  /** Per-account requests per minute and concurrency (Redis-shared or in-process). */
  readonly rateLimiter: RateLimiter;
  /** Idempotency-Key claims and remembered answers (migrated by the caller). */
  readonly idempotency: IdempotencyStore;
  /** The gateway's metrics: every route counted, billable calls metered (src/metrics). */
  readonly metrics: GatewayMetrics;
  /** Base of links the gateway hands out (signed downloads); default: the request's own origin. */
  readonly publicBaseUrl?: string | undefined;
  readonly version?: string;
  /** Whole-request budget of a chat call; the spec's 180 s unless a test shortens it. */
  readonly chatTimeoutMs?: number;
  /** The image endpoints' hop, ladder and keep-alive times; the spec's unless a test shortens them. */
  readonly imageTimings?: Partial<ImageTimings>;
  /** The speech and voice-clone calls' hop and ladder times; the defaults unless a test shortens them. */
  readonly speechTimings?: Partial<SpeechTimings>;
  /** Header, request and idle time limits; the defaults unless a test shortens them. */
  readonly intakeTimings?: Partial<IntakeTimings>;
  readonly logger?: FastifyServerOptions['logger'] | FastifyServerOptions['loggerInstance'];
  readonly now?: () => number;
  /** OpenTelemetry tracing (OTEL_EXPORTER_OTLP_ENDPOINT); absent or null: off. */
  readonly tracer?: RequestTracer | null;
  /** The gateway's shutdown: requests refused while it drains, calls it may end (src/lifecycle). */
  readonly drain?: Drain;
  /** TRUST_PROXY and CORS_ORIGINS (src/http/edge.ts); default: no proxy trusted, CORS off. */
  readonly trustProxy?: TrustProxy;
  readonly corsOrigins?: CorsOrigins;
  /** The Responses WebSocket mode (RESPONSES_WEBSOCKET, src/http/protocols/responses-socket.ts); default on. */
  readonly responsesSocket?: ResponsesSocketSettings;
  /** The account holders' web console: sign-in links and sessions (src/console). */
  readonly consoleSessions: ConsoleSessions;
  /** Paid top-ups (src/payments): the billing API, Stripe's webhook when configured, the console's Billing page. */
  readonly payments?: PaymentsSetup;
  /** A holder's own account: sign-up, password sign-in and reset (src/accounts). */
  readonly logins: Logins;
  readonly signUps: SignUps;
  readonly passwords: PasswordSignIn;
  readonly emailChanges: EmailChanges;
  /** Channel health: cooldowns, disabled channels, probes (src/channels); absent: a board of the app's own, no admin view. */
  readonly channelHealth?: ChannelHealthAdmin;
}

/**
 * fastify's two lines per request ("incoming request", "request completed") are replaced by one
 * access line written with the call's model, key, tokens and cost (src/metrics/access-log.ts).
 * Its error lines stay (a failed response, a broken stream).
 */
class AccessLogController extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply, metadata: unknown): void {
    if (error) super.requestCompleted(error, request, reply, metadata as never);
  }
}

export const requestSerializers = {
  req(request: { method: string; url: string; ip?: string; id?: string }) {
    return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip, id: request.id };
  },
};

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const loggerIsInstance = deps.logger !== undefined && typeof deps.logger === 'object' && 'child' in (deps.logger as object);
  const timings = { ...INTAKE_TIMINGS, ...deps.intakeTimings };
  const app = Fastify({
    ...(loggerIsInstance
      ? { loggerInstance: deps.logger as FastifyServerOptions['loggerInstance'] }
      : { logger: (deps.logger as FastifyServerOptions['logger']) ?? false }),
    ...serverOptions(timings),
    // Page ids are up to 200 characters, object keys up to 512.
    routerOptions: { maxParamLength: 600 },
    genReqId: () => `req_${crypto.randomUUID().replaceAll('-', '')}`,
    requestIdHeader: false,
    // A hop count is fastify's too (its types omit it).
    trustProxy: (deps.trustProxy ?? false) as FastifyServerOptions['trustProxy'],
    logController: new AccessLogController(),
    // While closing, the drain plugin refuses requests in their endpoint's shape (fastify's own 503 has none).
    return503OnClosing: deps.drain === undefined,
    // A URL the router cannot take (a malformed percent-encoding) has no route: answered in the
    // shape of the API its path belongs to, without echoing it.
    frameworkErrors: (error, request, reply) => {
      setRequestIdHeader(request, reply);
      return sendByPath(request, reply, clientErrorOf(error, request) ?? new GatewayError('invalid_request', 'invalid request'));
    },
  });
  // First: it records every route registered after it (GET /openapi.json describes them all).
  await app.register(openApiPlugin, { version: deps.version ?? '0.0.0' });

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof UnreadableEventError) {
      request.log.error({ err: error, streamId: error.streamId, revision: String(error.revision) }, 'a stream of the log cannot be read');
      return sendError(request, reply, unavailable(error.streamId, request.id));
    }
    // Fastify's own refusals (unparsable JSON, body too large, bad content type) are the client's fault.
    const refusal = clientErrorOf(error, request);
    if (refusal) return sendError(request, reply, refusal);
    const failure = failureOf(error, request.id);
    if (failure.code === 'service_unavailable') request.log.warn({ err: error }, 'request failed: its storage (database, event store or Redis) cannot be reached');
    else request.log.error({ err: error }, 'request failed');
    return sendError(request, reply, failure);
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, notFound(request)));
  // First of all: every answer carries x-request-id, a refusal while draining included.
  await app.register(requestIdPlugin);
  // Next: a request refused because the gateway drains goes through no other hook.
  if (deps.drain) await app.register(drainPlugin, { drain: deps.drain });

  // First: the request's span starts before any other hook runs (or refuses).
  await app.register(tracingPlugin, { tracer: deps.tracer ?? null });
  // Next: its hooks count every route registered after it, refusals of the plugins below included.
  await app.register(metricsPlugin, { metrics: deps.metrics });
  // Media responses carry the request id on every answer, a refused key's included (so before
  // authentication). A callback hook: no promise per request for what is one header at most.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.routeOptions.config?.trace) reply.header('x-gateway-trace', request.id);
    done();
  });
  // Before the intake and authentication: a preflight is answered, and every refusal carries the
  // CORS headers a browser needs to read it (off unless CORS_ORIGINS is set).
  await registerCors(app, deps.corsOrigins ?? null);
  // The config's `body_limits`, read once: route limits are set as the routes are registered.
  await app.register(intakePlugin, { timings, bodyLimits: deps.registry.config.body_limits ?? {} });
  await app.register(authPlugin, { ledger: deps.ledger, sql: deps.sql, ...(deps.now ? { now: deps.now } : {}) });
  await app.register(agentKeyGate);
  await app.register(rateLimitPlugin, { limiter: deps.rateLimiter, onRefused: (exceeded) => deps.metrics.rateLimited(exceeded) });
  await app.register(idempotencyPlugin, { store: deps.idempotency });
  const now = deps.now ?? (() => Math.floor(Date.now() / 1000));
  await app.register(refusedCallsPlugin, { ledger: deps.ledger, now });
  await app.register(balanceRoutes);
  await app.register(modelRoutes(deps.registry));
  await app.register(geminiModelRoutes(deps.registry));
  await app.register(embeddingsRoutes);
  // Channel health (src/channels): the gateway's own board, else one for this app.
  const router = new Router(deps.registry.config, Math.random, deps.channelHealth?.board ?? new ChannelBoard(healthPolicyOf(deps.registry.config.channel_health)));
  // A reloaded config (POST /admin/v1/config/reload, SIGHUP) is routed from the next call on.
  deps.registry.onReplace((config) => router.replace(config));
  // Conversations stay on the channel that served them while it is usable (src/channels/session-pins.ts).
  const pins = new SessionPins({ onOutcome: (outcome) => deps.metrics.sessionPinned(outcome) });
  const knowledgeRead = { queries: deps.knowledgeQueries, objects: deps.objects, publicBaseUrl: deps.publicBaseUrl, now };
  await app.register(
    chatRoutes({
      ledger: deps.ledger,
      registry: deps.registry,
      router,
      timeoutMs: deps.chatTimeoutMs ?? CHAT_TIMEOUT_MS,
      now,
      pins,
    }, { enterprises: deps.enterprises, knowledge: deps.knowledgeQueries, registry: deps.registry, router }),
  );
  // `GET /v1/responses` as a WebSocket: each response is a `POST /v1/responses` stream of this app's own.
  await app.register(responsesSocketRoutes({ settings: deps.responsesSocket ?? RESPONSES_SOCKET_DEFAULTS, timeoutMs: deps.chatTimeoutMs ?? CHAT_TIMEOUT_MS }));
  await app.register(
    imageRoutes({
      ledger: deps.ledger,
      registry: deps.registry,
      router,
      now,
      ...(deps.imageTimings ? { timings: deps.imageTimings } : {}),
      // The asynchronous mode: image tasks, run in this process, their answers kept.
      tasks: deps.tasks,
      queries: deps.taskQueries,
      background: deps.workflows.background,
      hosted: deps.hosted,
      uploadsDir: deps.uploadsDir,
      ...(deps.uploadSpoolLimit !== undefined ? { uploadSpoolLimit: deps.uploadSpoolLimit } : {}),
      viewsAt: (position: Position | null) => deps.runner.waitFor(position),
      mediaProbe: deps.mediaProbe ?? NO_MEDIA_PROBE,
    }),
  );
  if (deps.hosted) await app.register(hostedFileRoutes(deps.hosted, now));
  const taskSubmit = {
    ledger: deps.ledger,
    tasks: deps.tasks,
    poller: deps.workflows.poller,
    now,
    submitTimeoutMs: deps.taskSubmitTimeoutMs ?? TASK_SUBMIT_TIMEOUT_MS,
    viewsAt: (position: Position | null) => deps.runner.waitFor(position),
  };
  // Smart-clip templates, kept 10 minutes on the gateway's clock (tests move it with `now`).
  const clipTemplates = new ClipTemplates(deps.registry, { now: () => now() * 1000, board: router.board });
  await app.register(clipTemplateRoutes(clipTemplates));
  await app.register(videoRoutes({ ...taskSubmit, registry: deps.registry, router, queries: deps.taskQueries, mediaProbe: deps.mediaProbe ?? NO_MEDIA_PROBE, clipTemplates }));
  await app.register(avatarRoutes({ ...taskSubmit, registry: deps.registry, router, queries: deps.taskQueries, mediaProbe: deps.mediaProbe ?? NO_MEDIA_PROBE }));
  const speech = {
    ...taskSubmit,
    registry: deps.registry,
    router,
    queries: deps.taskQueries,
    background: deps.workflows.background,
    hosted: deps.hosted,
    publicBaseUrl: deps.publicBaseUrl,
    timings: deps.speechTimings,
    mediaProbe: deps.mediaProbe ?? NO_MEDIA_PROBE,
  };
  await app.register(speechRoutes(speech));
  await app.register(voiceRoutes(speech));
  const music = { ...taskSubmit, registry: deps.registry, router, queries: deps.taskQueries };
  await app.register(musicRoutes(music));
  await app.register(musicAssetRoutes(music));
  await app.register(
    transcriptRoutes({ ...taskSubmit, registry: deps.registry, router, background: deps.workflows.background, timings: { ...TRANSCRIPT_TIMINGS, ...deps.transcriptTimings }, mediaProbe: deps.mediaProbe ?? NO_MEDIA_PROBE }),
  );
  await app.register(wikiRoutes(knowledgeRead));
  await app.register(usageRoutes(deps.sql, now));
  if (deps.payments) {
    await app.register(billingRoutes({ payments: deps.payments.payments, sql: deps.sql, publicBaseUrl: deps.publicBaseUrl, settled: (position) => deps.runner.waitFor(position) }));
    const stripe = deps.payments.stripe;
    if (stripe) await app.register(stripeWebhookRoutes({ payments: deps.payments.payments, stripe: stripe.client, webhookSecret: stripe.webhookSecret, metrics: deps.metrics.payments }));
  }
  await app.register(signUpRoutes(deps.signUps, deps.publicBaseUrl));
  await app.register(mcpRoutes({ ...knowledgeRead, version: deps.version ?? '0.0.0' }));
  await app.register(adminRoutes(deps), { prefix: '/admin/v1' });
  await app.register(
    consoleRoutes({
      ledger: deps.ledger,
      sql: deps.sql,
      registry: deps.registry,
      knowledgeQueries: deps.knowledgeQueries,
      sessions: deps.consoleSessions,
      payments: deps.payments?.payments,
      enterprises: deps.enterprises,
      settled: (position) => deps.runner.waitFor(position),
      now,
      publicBaseUrl: deps.publicBaseUrl,
      signUps: deps.signUps,
      passwords: deps.passwords,
      emailChanges: deps.emailChanges,
      logins: deps.logins,
    }),
    { prefix: '/console' },
  );
  app.get('/healthz', { config: { auth: 'none' } }, async () => ({ status: 'ok' }));
  return app;
}
