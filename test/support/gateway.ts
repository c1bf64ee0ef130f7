import { Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config/load';
import type { GatewayConfig } from '../../src/config/schema';
import { requestSerializers } from '../../src/runtime/app';
import { LOG_REDACT } from '../../src/metrics/redact';
import { createGateway, type Gateway, type GatewayOverrides } from '../../src/runtime/gateway';
import { settingsFromEnv } from '../../src/runtime/settings';
import { startSimulator, type Simulator } from '../../src/simulator';
import { testDatabase, type TestDatabase } from './storage';

export interface TestGateway {
  readonly gateway: Gateway;
  readonly db: TestDatabase;
  /** The gateway's DATA_DIR (a fresh temporary directory, removed by close()). */
  readonly dataDir: string;
  /** Every log line the gateway wrote. */
  readonly logs: string[];
  admin(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<LightMyRequestResponse>;
  /** A new account with the sign-up grant and one key; returns both. */
  accountWithKey(keyFields?: Record<string, unknown>): Promise<{ accountId: string; keyId: string; key: string }>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  readonly config?: GatewayConfig;
  readonly now?: () => number;
  readonly db?: TestDatabase;
  readonly chatTimeoutMs?: number;
  /** Rate limiter options (a Redis URL and key prefix, a short lease TTL); default in-process. */
  readonly rateLimits?: GatewayOverrides['rateLimits'];
  readonly imageTimings?: GatewayOverrides['imageTimings'];
  readonly speechTimings?: GatewayOverrides['speechTimings'];
  readonly intakeTimings?: GatewayOverrides['intakeTimings'];
  readonly idempotencyMaxStoredBytes?: number;
  /** The gateway's environment (settings read from it: OTEL_*, METRICS_TOKEN, ...); default empty. */
  readonly env?: NodeJS.ProcessEnv;
  /** SHUTDOWN_GRACE_S of `gateway.close()` (default 30). */
  readonly shutdownGraceS?: number;
  /** READY_MAX_PROJECTION_LAG_S (default 60; null: not checked). */
  readonly readyMaxProjectionLagS?: number | null;
  /** `/readyz`'s check time limit and verdict cache. */
  readonly readiness?: GatewayOverrides['readiness'];
  readonly taskPoller?: GatewayOverrides['taskPoller'];
  readonly taskSweepEveryMs?: number;
  /** How often channel states recorded by other instances are read (default 2 s). */
  readonly channelFollowMs?: number;
  readonly jobsPrefix?: string;
  readonly taskSubmitTimeoutMs?: number;
  readonly transcriptTimings?: GatewayOverrides['transcriptTimings'];
  /** REDIS_URL of the gateway (BullMQ jobs, rate limits); default none (in-process). */
  readonly redisUrl?: string;
  /** The media URL probe (a fake, NO_MEDIA_PROBE); default the config's `media_probe` (on, private addresses refused). */
  readonly mediaProbe?: GatewayOverrides['mediaProbe'];
}

export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const db = options.db ?? (await testDatabase());
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-test-'));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = pino({ level: 'debug', serializers: requestSerializers, redact: LOG_REDACT }, sink);
  const settings = {
    ...settingsFromEnv(options.env ?? {}),
    dataDir,
    adminToken: 'test-admin-token',
    keyEncryptionSecret: 'ab'.repeat(32),
    eventStoreUrl: undefined,
    databaseUrl: undefined,
    redisUrl: options.redisUrl,
    ...(options.shutdownGraceS !== undefined ? { shutdownGraceS: options.shutdownGraceS } : {}),
    ...(options.readyMaxProjectionLagS !== undefined ? { readyMaxProjectionLagS: options.readyMaxProjectionLagS } : {}),
  };
  const config = options.config ?? loadConfig(undefined).config;
  const gateway = await createGateway(settings, {
    sql: db.sql,
    // Tests that are not about channel health (they say nothing of it) keep every channel in the rotation:
    // the failures one test provokes would otherwise cool a channel down for the next. Credentials refused
    // still disable a channel.
    config: config.channel_health ? config : { ...config, channel_health: { failures_before_cooldown: 1000, cooldown_s: 1, max_cooldown_s: 1, probe_interval_s: 0 } },
    logger,
    ...(options.now ? { now: options.now } : {}),
    ...(options.chatTimeoutMs ? { chatTimeoutMs: options.chatTimeoutMs } : {}),
    ...(options.rateLimits ? { rateLimits: options.rateLimits } : {}),
    ...(options.imageTimings ? { imageTimings: options.imageTimings } : {}),
    ...(options.speechTimings ? { speechTimings: options.speechTimings } : {}),
    ...(options.intakeTimings ? { intakeTimings: options.intakeTimings } : {}),
    ...(options.idempotencyMaxStoredBytes ? { idempotencyMaxStoredBytes: options.idempotencyMaxStoredBytes } : {}),
    ...(options.readiness ? { readiness: options.readiness } : {}),
    ...(options.taskPoller ? { taskPoller: options.taskPoller } : {}),
    ...(options.taskSweepEveryMs ? { taskSweepEveryMs: options.taskSweepEveryMs } : {}),
    ...(options.channelFollowMs ? { channelFollowMs: options.channelFollowMs } : {}),
    ...(options.jobsPrefix ? { jobsPrefix: options.jobsPrefix } : {}),
    ...(options.taskSubmitTimeoutMs ? { taskSubmitTimeoutMs: options.taskSubmitTimeoutMs } : {}),
    ...(options.transcriptTimings ? { transcriptTimings: options.transcriptTimings } : {}),
    ...(options.mediaProbe ? { mediaProbe: options.mediaProbe } : {}),
  });
  // Tests start from a ready gateway: /readyz answers 200 once the warm start has ended.
  await gateway.warmed;

  const admin: TestGateway['admin'] = (method, path, body) =>
    gateway.app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: { authorization: 'Bearer test-admin-token' },
      ...(body !== undefined ? { payload: body as object } : {}),
    });

  return {
    gateway,
    db,
    dataDir,
    logs,
    admin,
    async accountWithKey(keyFields = {}) {
      const account = await admin('POST', '/accounts', { name: 'test account' });
      if (account.statusCode !== 201) throw new Error(`account: ${account.body}`);
      const accountId = account.json().id as string;
      const key = await admin('POST', `/accounts/${accountId}/keys`, { name: 'test key', ...keyFields });
      if (key.statusCode !== 201) throw new Error(`key: ${key.body}`);
      return { accountId, keyId: key.json().id as string, key: key.json().key as string };
    },
    async close() {
      await gateway.close();
      if (!options.db) await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The upstream simulator and a gateway listening on a free port, its channels pointing at the simulator. */
export interface SimulatedGateway {
  readonly sim: Simulator;
  readonly t: TestGateway;
  readonly baseUrl: string;
  close(): Promise<void>;
}

export async function startSimulatedGateway(config: (sim: Simulator) => GatewayConfig, options: Omit<TestGatewayOptions, 'config'> = {}): Promise<SimulatedGateway> {
  const sim = await startSimulator();
  const t = await startTestGateway({ ...options, config: config(sim) });
  await t.gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.gateway.app.server.address() as { port: number }).port;
  return {
    sim,
    t,
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      await t.close();
      await sim.close();
    },
  };
}
