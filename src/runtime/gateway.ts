import { createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { sweepExpiredHolds } from '../jobs/hold-sweeper';
import { IdempotencyStore } from '../idempotency/store';
import { startGatewayChores } from './chores';
import { recentKeys, WarmStart, type WarmStartOutcome } from './warm-start';
import { CHANNEL_FOLLOW_MS, ChannelFollower } from '../channels/follow';
import { KnowledgeService } from '../commands/knowledge/service';
import { Ledger } from '../commands/ledger';
import { Enterprises } from '../commands/enterprise/service';
import { loadConfig } from '../config/load';
import { ModelRegistry } from '../config/registry';
import type { ChannelConfig, GatewayConfig } from '../config/schema';
import { buildApp, type AppDeps } from './app';
import { paymentsFromEnv } from '../payments/setup';
import { createRateLimiter, type RateLimiter, type RateLimiterOptions } from '../limits';
import { objectStoreFromEnv } from '../objects/store';
import { HostedOutputs, hostedStoreOf } from '../objects/hosted';
import { TaskService } from '../commands/task/service';
import { createJobQueue } from '../jobs';
import { TaskQueries } from '../projections/tasks/queries';
import type { PollerSettings } from '../tasks/poller';
import { ConfiguredProbe } from '../media-check/from-config';
import type { UrlProbe } from '../media-check/port';
import { TaskWorkflows, type TaskWorkflowLog } from '../tasks/workflows';
import { allProjections } from '../projections';
import { openHolds } from '../projections/accounts/open-holds';
import { KnowledgeQueries } from '../projections/knowledge/queries';
import { meteredStore } from '../metrics/event-store';
import { GatewayMetrics } from '../metrics/metrics';
import { VERSION } from './version';
import { metricsRoute, metricsTokenOf } from '../metrics/route';
import { ProjectionRunner, type Parking } from '../projections/runner/runner';
import { KeyCipher } from '../secrets/api-key';
import { sqlSnapshotStore } from '../commands/snapshot/store';
import { KeyVault } from '../secrets/key-vault';
import { ConsoleSessions } from '../console/sessions';
import { openHolderAccounts } from '../accounts/holders';
import type { Sql } from '../storage/sql';
import { redactedEndpoint, tracingSettingsOf } from '../tracing/settings';
import { gatewayChecks } from '../lifecycle/checks';
import { Drain } from '../lifecycle/drain';
import { ChannelBoard } from '../channels/board';
import { healthPolicyOf, probeIntervalMsOf } from '../channels/health';
import { auditChannelChanges, restoreDisabled } from '../channels/audit';
import type { ReloadOutcome } from '../channels/admin';
import { ChannelProbes, probeChannel } from '../channels/probe';
import { readyzRoute } from '../http/plugins/lifecycle';
import { Readiness, type ReadinessOptions } from '../lifecycle/readiness';
import { closeHttp, flushLedger } from '../lifecycle/shutdown';
import { SnapshotBackfill } from '../commands/snapshot/backfill';

import { configReload } from './config-reload';
import { openStorage, type Storage } from './storage';
import { adminTokenOf, persistentSecret, SettingError, type Settings } from './settings';

export interface Gateway {
  readonly app: FastifyInstance;
  readonly ledger: Ledger;
  readonly runner: ProjectionRunner;
  readonly storage: Storage;
  readonly registry: ModelRegistry;
  /** Channel health: cooldowns and disabled channels (src/channels). */
  readonly channels: ChannelBoard;
  readonly knowledge: KnowledgeService;
  readonly enterprises: Enterprises;
  /** Media outputs the gateway hosts (signed 24-hour links, swept every 10 minutes). */
  readonly hosted: HostedOutputs;
  readonly tasks: TaskService;
  readonly taskQueries: TaskQueries;
  /** Media tasks outside requests: the upstream poller, the gateway's own runs, expiry and recovery. */
  readonly workflows: TaskWorkflows;
  readonly adminToken: string;
  /** This instance's metrics registry (`GET /metrics`). */
  readonly metrics: GatewayMetrics;
  /** What `GET /readyz` answers. */
  readonly readiness: Readiness;
  /** The warm start (src/runtime/warm-start.ts): resolves when it has ended, never rejects. */
  readonly warmed: Promise<WarmStartOutcome>;
  /** Re-reads GATEWAY_CONFIG (SIGHUP, POST /admin/v1/config/reload): validated whole, applied at once, recorded as `ConfigApplied`. */
  reloadConfig(trigger: 'sighup' | 'admin'): Promise<ReloadOutcome>;
  /**
   * A graceful shutdown: no new requests (`/readyz` 503 at once), the calls in flight get
   * SHUTDOWN_GRACE_S to finish, then the rest are ended in their protocol's way and settled; the
   * ledger's queued commands are appended and the projections catch up; storage closes. Called
   * again while it runs, it ends the grace at once (a second signal).
   */
  close(): Promise<void>;
}

export interface GatewayOverrides {
  readonly sql?: Sql;
  readonly config?: GatewayConfig;
  readonly logger?: AppDeps['logger'];
  readonly now?: () => number;
  readonly chatTimeoutMs?: number;
  /** A rate limiter to use instead of building one (the caller closes it). */
  readonly rateLimiter?: RateLimiter;
  /** Options of the limiter the gateway builds, over the settings' REDIS_URL (tests: a
   * key prefix of their own, a short lease TTL). */
  readonly rateLimits?: RateLimiterOptions;
  readonly imageTimings?: AppDeps['imageTimings'];
  readonly speechTimings?: AppDeps['speechTimings'];
  readonly intakeTimings?: AppDeps['intakeTimings'];
  /** Largest 2xx answer kept for an Idempotency-Key replay (default 4 MiB). */
  readonly idempotencyMaxStoredBytes?: number;
  /** `/readyz`'s check time limit and verdict cache (tests shorten them). */
  readonly readiness?: Pick<ReadinessOptions, 'timeoutMs' | 'cacheMs'>;
  /** How often upstream tasks are polled, and their time limits (tests shorten them). */
  readonly taskPoller?: Partial<PollerSettings>;
  /** How often overdue tasks are expired (default 15 s). */
  readonly taskSweepEveryMs?: number;
  /** How often the channel states other instances recorded are read (default CHANNEL_FOLLOW_MS). */
  readonly channelFollowMs?: number;
  /** The BullMQ key prefix (tests use one of their own on a shared Redis). */
  readonly jobsPrefix?: string;
  /** The upstream's time limit for accepting a media task (default the spec's 60 s). */
  readonly taskSubmitTimeoutMs?: number;
  /** How long a transcript request waits and how often it polls (default 55 s, 1 s). */
  readonly transcriptTimings?: AppDeps['transcriptTimings'];
  /** The media URL probe instead of the config's `media_probe` (tests: a fake, or NO_MEDIA_PROBE). */
  readonly mediaProbe?: UrlProbe;
}

export async function createGateway(settings: Settings, overrides: GatewayOverrides = {}): Promise<Gateway> {
  const config = overrides.config ?? loadConfig(settings.configPath).config;
  // The OTEL_* variables are read here, before anything is opened: only `serve` (and tests) trace.
  const tracingSettings = tracingSettingsOf(settings.env);
  if ('invalid' in tracingSettings) throw new SettingError(tracingSettings.invalid);
  const tracing = tracingSettings.tracing;
  // Export failures are told through the app's logger, which exists before any span does.
  let tracingLog: FastifyBaseLogger | null = null;
  // The SDK (about 20 MB of resident memory) is loaded only when tracing is on.
  const tracer = tracing
    ? new (await import('../tracing/tracer')).GatewayTracer(
        tracing,
        {
          failing: (error) => tracingLog?.warn({ err: error, endpoint: redactedEndpoint(tracing.url) }, 'tracing: spans cannot be exported; they are dropped until the endpoint answers'),
          recovered: () => tracingLog?.info('tracing: spans are exported again'),
        },
        VERSION,
      )
    : null;
  const registry = new ModelRegistry(config);
  // Before the app's logger exists: a fallback of the embedded database is said on stderr.
  const storage = await openStorage(settings, overrides.sql, (message) => process.stderr.write(`${message}\n`));
  const clock = overrides.now ?? (() => Math.floor(Date.now() / 1000));
  // Made first: the store's appends are timed, and the app counts every route. Its scrape-time
  // reads are of parts made below (they run once the gateway serves).
  let reportMetricsError: (error: unknown) => void = () => {};
  const metrics = new GatewayMetrics(
    {
      parkedEvents: () => runner.parkedCounts(),
      projectionLag: () => runner.lag(),
      openHolds: () => openHolds(storage.sql, clock()),
      tasksInFlight: () => taskQueries.inFlightByFamily(),
    },
    { catalogueId: (model) => registry.resolve(model)?.id, engine: storage.store.engine, onError: (error) => reportMetricsError(error) },
  );
  const store = meteredStore(storage.store, metrics);
  const secret = persistentSecret(settings.dataDir, 'key-encryption-secret', settings.keyEncryptionSecret, () => randomBytes(32).toString('hex'));
  const vault = new KeyVault(storage.sql, new KeyCipher(secret.value));
  const ledger = new Ledger(store, vault, { ...(settings.callCommit ? { callCommit: settings.callCommit } : {}), snapshots: sqlSnapshotStore(storage.sql), ...(overrides.now ? { now: overrides.now } : {}) });
  const knowledge = new KnowledgeService(store, ledger, overrides.now);
  const enterprises = new Enterprises(store, ledger, overrides.now);
  // Download links are signed with a key derived from the key-encryption secret, never the secret itself.
  const linkSecret = createHmac('sha256', secret.value).update('object-download-links').digest('hex');
  const objects = objectStoreFromEnv(settings.env, settings.dataDir, linkSecret);
  const hosted = new HostedOutputs(storage.sql, hostedStoreOf(objects, settings.dataDir, linkSecret), {
    onDeleteFailed: (key, error) => app.log.warn({ err: error, key }, 'hosted media sweeper: the object could not be deleted; tried again next sweep'),
  });
  await hosted.migrate();
  // A task's call is counted when its hold closes, wherever that happens (a poll job, a sweep).
  const tasks = new TaskService(store, ledger, (call, captured) =>
    metrics.call(call, { total: call.latency_ms / 1000, firstByte: null, upstream: null, cost: captured }),
  );
  const taskQueries = new TaskQueries(storage.sql);
  // Told through the app's logger once it exists (jobs may fail before, at the start's recovery).
  let taskLog: TaskWorkflowLog | null = null;
  const laterLog: TaskWorkflowLog = {
    info: (fields, message) => taskLog?.info(fields, message),
    warn: (fields, message) => taskLog?.warn(fields, message),
    error: (fields, message) => (taskLog ? taskLog.error(fields, message) : console.error(message, fields)),
  };
  // BullMQ (jobs shared by every instance, kept in Redis across restarts) with REDIS_URL; else in-process.
  const jobs = await createJobQueue({
    redisUrl: settings.redisUrl,
    ...(overrides.jobsPrefix ? { prefix: overrides.jobsPrefix } : {}),
    onRun: (name, outcome, ms) => metrics.jobRun(name, outcome, ms),
    onError: (name, id, error, attempt, final) =>
      laterLog.warn({ err: error, job: name, id, attempt }, final ? 'a background job failed for the last time and was dropped' : 'a background job failed; it is retried'),
  });
  // Told of parked events once the app (and its logger) exists.
  let reportParked: (projection: string, parked: readonly Parking[]) => void = () => {};
  const runner = new ProjectionRunner(storage.sql, store, allProjections, {
    applies: settings.projections === 'in-process',
    pendingAppends: () => Promise.all([ledger.idle(), enterprises.idle()]).then(() => {}),
    onParked: (projection, parked) => reportParked(projection, parked),
  });
  await runner.migrate();
  // One store: the app's Idempotency-Key plugin claims keys in it, the purge below trims it.
  const idempotency = new IdempotencyStore(storage.sql, {
    ...(overrides.now ? { now: overrides.now } : {}),
    ...(overrides.idempotencyMaxStoredBytes ? { maxStoredBytes: overrides.idempotencyMaxStoredBytes } : {}),
  });
  await idempotency.migrate();
  const consoleSessions = new ConsoleSessions(storage.sql, store, clock);
  await consoleSessions.migrate();
  const holders = await openHolderAccounts({ sql: storage.sql, store, ledger, mail: settings, config: () => registry.config.signup, now: clock, log: () => app?.log ?? null });
  const channels = new Map(config.channels.map((c) => [c.id, c]));
  const workflows = new TaskWorkflows({
    tasks,
    queries: taskQueries,
    jobs,
    // A task keeps the channel it was submitted to, even one a reload removed.
    channel: (id) => registry.config.channels.find((c) => c.id === id) ?? channels.get(id),
    now: clock,
    log: laterLog,
    // The runner's own progress, not a catch-up of the recovery's own: nothing applies events but the runner.
    viewsCurrent: async () => runner.waitFor(await store.headPosition()),
    // Embedded mode: DATA_DIR is locked to this process, so no other can be running a task of its own.
    soleInstance: settings.databaseUrl === undefined && overrides.sql === undefined,
    poller: { pollEveryMs: settings.taskPollIntervalMs, ...overrides.taskPoller },
    ...(overrides.taskSweepEveryMs ? { sweepEveryMs: overrides.taskSweepEveryMs } : {}),
  });
  const adminToken = adminTokenOf(settings).value;
  // Built here (not in buildApp) so that close() ends its Redis connection after the app.
  // Redis' state is logged once per outage (not per request), through the app's logger: what
  // happens before that exists is told when it does (the latest word only).
  let limiterLog: FastifyBaseLogger | null = null;
  let untold: ((log: FastifyBaseLogger) => void) | null = null;
  const tell = (say: (log: FastifyBaseLogger) => void) => (limiterLog ? say(limiterLog) : (untold = say));
  const ownLimiter = overrides.rateLimiter
    ? null
    : await createRateLimiter(
        { redisUrl: settings.redisUrl, ...overrides.rateLimits },
        {
          unavailable: (error) =>
            tell((log) => log.warn({ err: error }, 'rate limiter: Redis unreachable; requests go through without rate limits until it is back')),
          available: () => tell((log) => log.info('rate limiter: Redis reachable again; rate limits apply')),
        },
      );
  const rateLimiter = overrides.rateLimiter ?? ownLimiter!;
  const drain = new Drain();
  // Channel health (src/channels): its changes appended to the log, chat channels probed.
  const channelBoard = new ChannelBoard(healthPolicyOf(config.channel_health));
  registry.followHealth(channelBoard);
  metrics.channelStates(channelBoard, () => registry.config.channels.map((c) => c.id));
  await restoreDisabled(channelBoard, store, config.channels);
  const channelAudit = auditChannelChanges(channelBoard, store, (error, channelId) => app.log.error({ err: error, channelId }, 'a channel state change could not be appended to the log'));
  // What other instances record (an operator's disable or enable, credentials refused, a probe's success) is
  // taken over here; the first poll only notes what is already there (restoreDisabled read it from the log).
  const channelFollower = new ChannelFollower(channelBoard, storage.sql, channelAudit);
  await channelFollower.poll();
  const probes = new ChannelProbes(channelBoard, () => registry.config.channels, (error) => app.log.warn({ err: error }, 'a channel probe failed to run'));
  // The media URL probe follows the config file too (a test's own probe stays as given).
  const mediaProbe = new ConfiguredProbe(config.media_probe);
  const reload = configReload({
    settings,
    registry,
    mediaProbe,
    board: channelBoard,
    probes,
    store,
    runner,
    clock,
    log: () => app.log,
  });
  const channelHealth = { board: channelBoard, channels: () => registry.config.channels, idle: () => channelAudit.idle(), probe: (channel: ChannelConfig) => probeChannel(channelBoard, channel), reload };
  const app = await buildApp({
    consoleSessions,
    payments: paymentsFromEnv(settings.env, store, ledger, storage.sql, metrics, clock, (error) => reportMetricsError(error)),
    logins: holders.logins, signUps: holders.signUps, passwords: holders.passwords, emailChanges: holders.emailChanges,
    drain,
    channelHealth,
    rateLimiter,
    idempotency,
    ledger,
    runner,
    sql: storage.sql,
    store,
    registry,
    metrics,
    adminToken,
    knowledge,
    knowledgeQueries: new KnowledgeQueries(storage.sql),
    enterprises,
    objects,
    hosted,
    uploadsDir: join(settings.dataDir, 'uploads'),
    uploadSpoolLimit: settings.uploadSpoolLimitMb * 1024 * 1024,
    tasks,
    taskQueries,
    workflows,
    mediaProbe: overrides.mediaProbe ?? mediaProbe,
    ...(overrides.taskSubmitTimeoutMs ? { taskSubmitTimeoutMs: overrides.taskSubmitTimeoutMs } : {}),
    ...(overrides.transcriptTimings ? { transcriptTimings: overrides.transcriptTimings } : {}),
    publicBaseUrl: settings.publicBaseUrl,
    trustProxy: settings.trustProxy,
    corsOrigins: settings.corsOrigins,
    ...(settings.responsesSocket ? { responsesSocket: settings.responsesSocket } : {}),
    version: VERSION,
    tracer,
    ...(overrides.logger !== undefined ? { logger: overrides.logger } : {}),
    ...(overrides.now ? { now: overrides.now } : {}),
    ...(overrides.chatTimeoutMs ? { chatTimeoutMs: overrides.chatTimeoutMs } : {}),
    ...(overrides.imageTimings ? { imageTimings: overrides.imageTimings } : {}),
    ...(overrides.speechTimings ? { speechTimings: overrides.speechTimings } : {}),
    ...(overrides.intakeTimings ? { intakeTimings: overrides.intakeTimings } : {}),
  });
  limiterLog = app.log;
  tracingLog = app.log;
  taskLog = app.log;
  if (tracing) app.log.info({ endpoint: redactedEndpoint(tracing.url), sampler: tracing.sampler.name }, 'tracing: exporting spans (OTLP/HTTP JSON)');
  (untold as ((log: FastifyBaseLogger) => void) | null)?.(app.log);
  reportParked = (projection, parked) => {
    for (const { event, error } of parked)
      app.log.error(
        { projection, streamId: event.streamId, revision: String(event.revision), eventId: event.id, type: event.type, error },
        'projection parked an event it cannot apply; the rest of its stream is parked too (gateway ledger verify --parked)',
      );
  };
  reportMetricsError = (error) => app.log.warn({ err: error }, 'metrics: a value could not be read');
  await app.register(metricsRoute({ metrics, token: metricsTokenOf(settings.env), host: settings.host }));
  const warmStart = new WarmStart(settings.warmStart);
  const readiness = new Readiness(
    gatewayChecks({
      store: storage.store,
      sql: storage.sql,
      limiter: rateLimiter,
      projections: runner.projections.map((p) => p.name),
      maxProjectionLagS: settings.readyMaxProjectionLagS,
    }).concat(warmStart.check()),
    {
      ...overrides.readiness,
      draining: () => drain.draining,
      onChange: (part, error) =>
        error === null ? app.log.info({ part }, 'readiness: the part answers again') : app.log.warn({ part, err: error }, 'readiness: a part is failing; /readyz answers 503'),
    },
  );
  await app.register(readyzRoute(readiness));
  runner.start((error) => app.log.error({ err: error }, 'projection runner stopped on an error; retrying'));
  await workflows.start();
  // Long histories without a usable snapshot (a restore, an import, a new state shape) are folded and
  // snapshotted now, in the background, so that their first call does not fold them (src/commands/snapshot/backfill.ts).
  const backfill = new SnapshotBackfill(storage.sql, storage.store, ledger.snapshotted);
  const backfilled = backfill.run().then((outcome) => {
    if (outcome.found > 0 || outcome.cut !== null) app.log.info({ ...outcome }, outcome.cut === null ? 'snapshot backfill: long streams without a snapshot loaded and snapshotted' : 'snapshot backfill: ended early; the rest are snapshotted at their first load');
    return outcome;
  });
  // Not awaited: /readyz says warm_start is failing until it has ended (within its budget), the backfill's time included.
  const warmed = warmStart.run(() => recentKeys(storage.sql, settings.warmStart.keys), ledger, backfilled).then((outcome) => {
    app.log.info({ ...outcome }, outcome.cut === null ? 'warm start: recently used keys and wallets loaded' : 'warm start: ended early; the rest load at their first call');
    return outcome;
  });
  probes.start(probeIntervalMsOf(config.channel_health));
  const stopChores = startGatewayChores({
    sweepHolds: () => sweepExpiredHolds(storage.sql, ledger, clock()),
    purgeIdempotencyKeys: () => idempotency.purge(),
    purgeConsoleSessions: () => Promise.all([consoleSessions.purge(), holders.purge()]),
    followChannels: () => channelFollower.poll(),
    followChannelsEveryMs: overrides.channelFollowMs ?? CHANNEL_FOLLOW_MS,
    sweepHostedMedia: () => hosted.sweep(clock()),
    log: app.log,
  });
  // The shutdown under way, and what ends its grace early (close() called again: a second signal).
  let closing: Promise<void> | null = null;
  let hurry = () => {};
  const hurried = new Promise<void>((resolve) => (hurry = resolve));
  return {
    ...{ app, ledger, runner, storage, registry },
    channels: channelBoard,
    knowledge,
    enterprises,
    hosted,
    tasks,
    taskQueries,
    workflows,
    adminToken,
    metrics,
    readiness,
    warmed,
    reloadConfig: reload,
    close() {
      if (closing) {
        hurry();
        return closing;
      }
      closing = (async () => {
        // What the projections' catch-up may use of the grace: the process exits within it, whatever their lag.
        const deadline = Date.now() + settings.shutdownGraceS * 1000;
        backfill.stop();
        stopChores();
        await closeHttp(app, drain, { graceMs: settings.shutdownGraceS * 1000, hurry: hurried, log: app.log });
        // The gateway's own task runs get what is left of the grace; past it they are failed and refunded.
        await workflows.close(Math.max(0, deadline - Date.now()));
        await tasks.idle();
        await probes.stop();
        await channelAudit.idle();
        ledger.stopLongReads();
        await flushLedger(ledger, runner, app.log, undefined, deadline);
        await ownLimiter?.close();
        holders.close();
        await storage.close();
        app.log.info('shutdown complete');
        // Last: what was buffered goes out, the settlements that ended during the close included.
        await tracer?.close();
      })();
      return closing;
    },
  };
}
