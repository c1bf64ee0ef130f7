import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { sweepExpiredHolds } from '../jobs/hold-sweeper';
import { IdempotencyStore } from '../idempotency/store';
import { startChore } from '../jobs/chore';
import { recentKeys, WarmStart, type WarmStartOutcome } from './warm-start';
import { CHANNEL_FOLLOW_MS, ChannelFollower } from '../channels/follow';
import { KnowledgeService } from '../commands/knowledge/service';
import { Ledger, type CallCommit } from '../commands/ledger';
import { Enterprises } from '../commands/enterprise/service';
import { loadConfig } from '../config/load';
import { ModelRegistry } from '../config/registry';
import type { ChannelConfig, GatewayConfig } from '../config/schema';
import { checkedStore } from '../events/store/checked';
import { createPostgresEventStore, migrateEvents } from '../events/store/postgres';
import type { EventStore } from '../events/store/port';
import { buildApp, type AppDeps } from './app';
import { createRateLimiter, type RateLimiter, type RateLimiterOptions } from '../limits';
import { objectStoreFromEnv } from '../objects/store';
import { HostedOutputs, hostedStoreOf } from '../objects/hosted';
import { TaskService } from '../commands/task/service';
import { createJobQueue } from '../jobs';
import { TaskQueries } from '../projections/tasks/queries';
import { POLLER_SETTINGS, type PollerSettings } from '../tasks/poller';
import { ConfiguredProbe } from '../probe/from-config';
import type { UrlProbe } from '../probe/port';
import { TaskWorkflows, type TaskWorkflowLog } from '../tasks/workflows';
import { allProjections } from '../projections';
import { openHolds } from '../projections/accounts/open-holds';
import { KnowledgeQueries } from '../projections/knowledge/queries';
import { meteredStore } from '../metrics/event-store';
import { GatewayMetrics } from '../metrics/metrics';
import { metricsRoute, metricsTokenOf } from '../metrics/route';
import { ProjectionRunner, type Parking } from '../projections/runner/runner';
import { KeyCipher } from '../secrets/api-key';
import { corsOriginsOf, trustProxyOf, type CorsOrigins, type TrustProxy } from '../http/edge';
import { SNAPSHOT_SCHEMA, sqlSnapshotStore } from '../commands/snapshot/store';
import { KEY_VAULT_SCHEMA, KeyVault } from '../secrets/key-vault';
import { ConsoleSessions } from '../console/sessions';
import { acquireDataDirLock } from '../storage/data-dir-lock';
import { openPglite, postgresSql, type Sql } from '../storage/sql';
import { tracingSettingsOf } from '../tracing/settings';
import { gatewayChecks } from '../lifecycle/checks';
import { Drain } from '../lifecycle/drain';
import { ChannelBoard } from '../channels/board';
import { healthPolicyOf, probeIntervalMsOf } from '../channels/health';
import { auditChannelChanges, restoreDisabled } from '../channels/audit';
import type { ReloadOutcome } from '../channels/admin';
import { readConfig } from '../config/reload';
import { ConfigApplied, GATEWAY_CONFIG_STREAM } from '../events/catalog';
import { ChannelProbes, probeChannel } from '../channels/probe';
import { readyzRoute } from '../http/plugins/lifecycle';
import { Readiness, type ReadinessOptions } from '../lifecycle/readiness';
import { closeHttp, flushLedger } from '../lifecycle/shutdown';

export interface Settings {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly redisUrl: string | undefined;
  readonly eventStoreUrl: string | undefined;
  readonly configPath: string | undefined;
  readonly adminToken: string | undefined;
  readonly keyEncryptionSecret: string | undefined;
  readonly logLevel: string;
  readonly publicBaseUrl: string | undefined;
  /** TRUST_PROXY (src/http/edge.ts). */
  readonly trustProxy: TrustProxy;
  /** CORS_ORIGINS (src/http/edge.ts); null: off. */
  readonly corsOrigins: CorsOrigins;
  /** How call metering commits (LEDGER_CALL_COMMIT): see CallCommit; undefined: the event store's default. */
  readonly callCommit: CallCommit | undefined;
  /** SHUTDOWN_GRACE_S: how long calls in flight may go on after SIGTERM/SIGINT (default 30). */
  readonly shutdownGraceS: number;
  /** READY_MAX_PROJECTION_LAG_S: the most a projection may be behind the log for `/readyz` to
   * answer 200 (default 60); null (`off`): not checked. */
  readonly readyMaxProjectionLagS: number | null;
  /** WARM_START_KEYS / WARM_START_BUDGET_S (src/runtime/warm-start.ts). */
  readonly warmStart: { readonly keys: number; readonly budgetMs: number };
  /** TASK_POLL_INTERVAL_MS: how often an upstream media task is asked about (default 5000). */
  readonly taskPollIntervalMs: number;
  /** PROJECTIONS: `in-process` (default), this process applies the log to the read models; `external`,
   * a `gateway projections run` worker does, and this process only follows its checkpoints (Postgres only). */
  readonly projections: 'in-process' | 'external';
  /** The environment the settings came from (object store settings are read from it). */
  readonly env: NodeJS.ProcessEnv;
}

/** Thrown for a setting the gateway cannot start with; the message names it and what it takes. */
export class SettingError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** An empty variable is an unset one, for every setting. */
const blank = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

/** PORT: unset or empty means 8080; anything else must be a TCP port (`Number("")` is 0, which
 * made the gateway listen on a random port). */
function portOf(value: string | undefined): number {
  if (value === undefined) return 8080;
  const port = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(port >= 1 && port <= 65_535)) throw new SettingError(`PORT must be a port number from 1 to 65535, not "${value}"`);
  return port;
}

function logLevelOf(value: string | undefined): string {
  if (value === undefined) return 'info';
  if (!LOG_LEVELS.includes(value)) throw new SettingError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, not "${value}"`);
  return value;
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): Settings {
  return {
    port: portOf(blank(env.PORT)),
    host: blank(env.HOST) ?? '127.0.0.1',
    dataDir: resolve(blank(env.DATA_DIR) ?? './data'),
    databaseUrl: blank(env.DATABASE_URL),
    redisUrl: blank(env.REDIS_URL),
    eventStoreUrl: blank(env.EVENTSTORE_URL),
    configPath: blank(env.GATEWAY_CONFIG),
    adminToken: blank(env.ADMIN_TOKEN),
    keyEncryptionSecret: blank(env.KEY_ENCRYPTION_SECRET),
    logLevel: logLevelOf(blank(env.LOG_LEVEL)),
    publicBaseUrl: blank(env.PUBLIC_BASE_URL),
    trustProxy: setting(() => trustProxyOf(blank(env.TRUST_PROXY))),
    corsOrigins: setting(() => corsOriginsOf(blank(env.CORS_ORIGINS))),
    callCommit: callCommitOf(blank(env.LEDGER_CALL_COMMIT)),
    shutdownGraceS: secondsOf('SHUTDOWN_GRACE_S', blank(env.SHUTDOWN_GRACE_S), 30),
    readyMaxProjectionLagS: projectionLagOf(blank(env.READY_MAX_PROJECTION_LAG_S)),
    warmStart: {
      keys: countOf('WARM_START_KEYS', blank(env.WARM_START_KEYS), 100),
      budgetMs: secondsOf('WARM_START_BUDGET_S', blank(env.WARM_START_BUDGET_S), 15) * 1000,
    },
    taskPollIntervalMs: pollIntervalOf(blank(env.TASK_POLL_INTERVAL_MS)),
    projections: projectionsOf(blank(env.PROJECTIONS), blank(env.DATABASE_URL)),
    env,
  };
}

/** A setting's own parser's refusal, as the start's refusal of that setting. */
function setting<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new SettingError((error as Error).message);
  }
}

function projectionsOf(value: string | undefined, databaseUrl: string | undefined): Settings['projections'] {
  if (value === undefined || value === 'in-process') return 'in-process';
  if (value !== 'external') throw new SettingError(`PROJECTIONS must be "in-process" or "external", not "${value}"`);
  // The embedded database is this process's alone (DATA_DIR is locked): no worker could open it.
  if (databaseUrl === undefined) throw new SettingError('PROJECTIONS=external needs DATABASE_URL: the embedded database cannot be shared with a projection worker');
  return value;
}

/** LEDGER_CALL_COMMIT; unset, the ledger picks by event store (defaultCallCommit). */
function callCommitOf(value: string | undefined): CallCommit | undefined {
  if (value === undefined) return undefined;
  if (value === 'sync' || value === 'async') return value;
  throw new SettingError(`LEDGER_CALL_COMMIT must be "sync" or "async", not "${value}"`);
}

/** A duration in seconds (decimals allowed), 0 or more. */
function secondsOf(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(seconds)) throw new SettingError(`${name} must be a number of seconds (0 or more), not "${value}"`);
  return seconds;
}

function countOf(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > 100_000) throw new SettingError(`${name} must be a whole number from 0 to 100000, not "${value}"`);
  return Number(value);
}

function projectionLagOf(value: string | undefined): number | null {
  if (value?.toLowerCase() === 'off') return null;
  if (value !== undefined && !/^\d+(\.\d+)?$/.test(value))
    throw new SettingError(`READY_MAX_PROJECTION_LAG_S must be a number of seconds or "off", not "${value}"`);
  return secondsOf('READY_MAX_PROJECTION_LAG_S', value, 60);
}

/** Whole milliseconds, at least 10 (the poller never waits less between two polls of a task). */
function pollIntervalOf(value: string | undefined): number {
  if (value === undefined) return POLLER_SETTINGS.pollEveryMs;
  const ms = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(ms >= 10 && ms <= 3_600_000)) throw new SettingError(`TASK_POLL_INTERVAL_MS must be a whole number of milliseconds from 10 to 3600000, not "${value}"`);
  return ms;
}

/** A secret from the environment, else the one generated into DATA_DIR on first start. */
function persistentSecret(dataDir: string, file: string, fromEnv: string | undefined, make: () => string) {
  if (fromEnv) return { value: fromEnv, generated: false };
  const path = join(dataDir, file);
  if (existsSync(path)) return { value: readFileSync(path, 'utf8').trim(), generated: false };
  mkdirSync(dataDir, { recursive: true });
  const value = make();
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  return { value, generated: true };
}

export function adminTokenOf(settings: Settings) {
  return persistentSecret(settings.dataDir, 'admin-token', settings.adminToken, () => `adm_${randomBytes(24).toString('hex')}`);
}

/** An endpoint as it may be logged: without credentials in its user-info. */
function redactedEndpoint(url: string): string {
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return url;
  parsed.username = '';
  parsed.password = '';
  return parsed.href;
}

export interface Storage {
  readonly sql: Sql;
  readonly store: EventStore;
  close(): Promise<void>;
}

/** Projections and the key vault in Postgres (DATABASE_URL) or PGlite under DATA_DIR;
 * events in EventStoreDB when EVENTSTORE_URL is set, else in the same database. */
export async function openStorage(settings: Settings, sqlOverride?: Sql): Promise<Storage> {
  let release = () => {};
  let sql: Sql;
  if (sqlOverride) sql = sqlOverride;
  else if (settings.databaseUrl) sql = postgresSql(settings.databaseUrl);
  else {
    mkdirSync(settings.dataDir, { recursive: true });
    release = acquireDataDirLock(settings.dataDir);
    sql = await openPglite(join(settings.dataDir, 'pglite'));
  }
  // The EventStoreDB client (gRPC) is loaded only when EVENTSTORE_URL is set.
  const engine = settings.eventStoreUrl
    ? (await import('../events/store/eventstoredb')).createEventStoreDbStore(settings.eventStoreUrl)
    : createPostgresEventStore(sql);
  // Every engine: an event that could not be read back is refused before it is written.
  const store = checkedStore(engine);
  if (!settings.eventStoreUrl) await migrateEvents(sql);
  await sql.exec(KEY_VAULT_SCHEMA);
  // Every engine: snapshots are kept in the gateway's database (EventStoreDB has none of its own).
  await sql.exec(SNAPSHOT_SCHEMA);
  return {
    sql,
    store,
    async close() {
      await store.close();
      if (!sqlOverride) await sql.close();
      release();
    },
  };
}

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
  /** The media URL probe instead of the config's `media_probe` (tests: a fake, or NO_PROBE). */
  readonly probe?: UrlProbe;
}

const VERSION = '0.1.0';

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
  const storage = await openStorage(settings, overrides.sql);
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
  await restoreDisabled(channelBoard, store, config.channels);
  const channelAudit = auditChannelChanges(channelBoard, store, (error, channelId) => app.log.error({ err: error, channelId }, 'a channel state change could not be appended to the log'));
  // What other instances record (an operator's disable or enable, credentials refused, a probe's success) is
  // taken over here; the first poll only notes what is already there (restoreDisabled read it from the log).
  const channelFollower = new ChannelFollower(channelBoard, storage.sql, channelAudit);
  await channelFollower.poll();
  const probes = new ChannelProbes(channelBoard, () => registry.config.channels, (error) => app.log.warn({ err: error }, 'a channel probe failed to run'));
  // Live configuration: the file read and validated whole, then applied in one turn of the event loop
  // (models, prices and channels together); a call in flight keeps the model, price and routes it took.
  // The media URL probe follows the config file too (a test's own probe stays as given).
  const mediaProbe = new ConfiguredProbe(config.media_probe);
  let reloads: Promise<unknown> = Promise.resolve();
  const reload = (trigger: 'sighup' | 'admin'): Promise<ReloadOutcome> => {
    const run = reloads.then(async (): Promise<ReloadOutcome> => {
      const read = await readConfig(settings.configPath, settings.env);
      if (!read.ok) return read;
      registry.replace(read.config);
      mediaProbe.apply(read.config.media_probe);
      channelBoard.setPolicy(healthPolicyOf(read.config.channel_health));
      probes.start(probeIntervalMsOf(read.config.channel_health));
      const event = {
        id: randomUUID(),
        type: ConfigApplied.type,
        data: { digest: read.digest, trigger, path: read.path.slice(0, 4096), channels: read.config.channels.length, models: read.config.models.length, at: clock() },
        metadata: trigger === 'admin' ? { actor: 'admin' } : {},
      };
      const appended = await store.append(GATEWAY_CONFIG_STREAM, [event], 'any');
      await runner.waitFor(appended.position);
      app.log.info({ digest: read.digest, path: read.path, trigger }, 'configuration reloaded');
      return { ok: true, digest: read.digest, path: read.path, channels: read.config.channels.length, models: read.config.models.length };
    });
    reloads = run.catch(() => {});
    return run;
  };
  const channelHealth = { board: channelBoard, channels: () => registry.config.channels, idle: () => channelAudit.idle(), probe: (channel: ChannelConfig) => probeChannel(channelBoard, channel), reload };
  const app = await buildApp({
    consoleSessions,
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
    tasks,
    taskQueries,
    workflows,
    probe: overrides.probe ?? mediaProbe,
    ...(overrides.taskSubmitTimeoutMs ? { taskSubmitTimeoutMs: overrides.taskSubmitTimeoutMs } : {}),
    ...(overrides.transcriptTimings ? { transcriptTimings: overrides.transcriptTimings } : {}),
    publicBaseUrl: settings.publicBaseUrl,
    trustProxy: settings.trustProxy,
    corsOrigins: settings.corsOrigins,
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
  // Not awaited: /readyz says warm_start is failing until it has ended (within its budget).
  const warmed = warmStart.run(() => recentKeys(storage.sql, settings.warmStart.keys), ledger).then((outcome) => {
    app.log.info({ ...outcome }, outcome.cut === null ? 'warm start: recently used keys and wallets loaded' : 'warm start: ended early; the rest load at their first call');
    return outcome;
  });
  probes.start(probeIntervalMsOf(config.channel_health));
  const stopSweeper = startChore(() => sweepExpiredHolds(storage.sql, ledger, clock()), 30_000, (error) => app.log.error({ err: error }, 'hold sweeper failed'));
  const stopIdempotencyPurge = startChore(() => idempotency.purge(), 10 * 60_000, (error) => app.log.error({ err: error }, 'idempotency key purge failed'));
  const stopConsolePurge = startChore(() => consoleSessions.purge(), 60 * 60_000, (error) => app.log.error({ err: error }, 'console session purge failed'));
  const stopChannelFollower = startChore(() => channelFollower.poll(), overrides.channelFollowMs ?? CHANNEL_FOLLOW_MS, (error) =>
    app.log.warn({ err: error }, 'channel states of other instances could not be read'),
  );
  const stopMediaSweeper = startChore(() => hosted.sweep(clock()), 10 * 60_000, (error) => app.log.error({ err: error }, 'hosted media sweeper failed'));
  // The shutdown under way, and what ends its grace early (close() called again: a second signal).
  let closing: Promise<void> | null = null;
  let hurry = () => {};
  const hurried = new Promise<void>((resolve) => (hurry = resolve));
  return {
    app,
    ledger,
    runner,
    storage,
    registry,
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
        stopSweeper();
        stopIdempotencyPurge();
        stopConsolePurge();
        stopMediaSweeper();
        stopChannelFollower();
        await closeHttp(app, drain, { graceMs: settings.shutdownGraceS * 1000, hurry: hurried, log: app.log });
        // The gateway's own task runs get the same grace; past it they are failed and refunded.
        await workflows.close(settings.shutdownGraceS * 1000);
        await tasks.idle();
        await probes.stop();
        await channelAudit.idle();
        await flushLedger(ledger, runner, app.log);
        await ownLimiter?.close();
        await storage.close();
        app.log.info('shutdown complete');
        // Last: what was buffered goes out, the settlements that ended during the close included.
        await tracer?.close();
      })();
      return closing;
    },
  };
}
