import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CallCommit } from '../commands/ledger';
import { DEFAULT_PGLITE_SHARED_BUFFERS_MB } from '../storage/pglite-settings';
import { POLLER_SETTINGS } from '../tasks/poller-settings';
import { DEFAULT_UPLOAD_SPOOL_LIMIT_MB } from '../http/media/images/upload-settings';
import { responsesSocketSettingsOf, type ResponsesSocketSettings } from '../http/protocols/responses-socket-settings';
import { corsOriginsOf, trustProxyOf, type CorsOrigins, type TrustProxy } from '../http/edge-settings';

// The gateway's settings from the environment (every variable the README documents that the gateway
// itself reads), each refused at start with its name when it cannot be used; and the secrets generated
// into DATA_DIR on first start.

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
  /** UPLOAD_SPOOL_LIMIT_MB: the most disk the files of multipart image edits in flight may take
   * (DATA_DIR/uploads; default 1024), one account at most half of it. */
  readonly uploadSpoolLimitMb: number;
  /** EMBEDDED_DATABASE: without DATABASE_URL, `postgres` (a server of the gateway's own under DATA_DIR,
   * refusing to start where it cannot run), `pglite` (in this process), or unset: the server where it
   * can run, else PGlite (src/runtime/storage.ts, openEmbeddedDatabase). */
  readonly embeddedDatabase: 'postgres' | 'pglite' | undefined;
  /** PGLITE_SHARED_BUFFERS_MB: the embedded database's buffer pool (default 32); unused with DATABASE_URL. */
  readonly pgliteSharedBuffersMb: number;
  /** PROJECTIONS: `in-process` (default), this process applies the log to the read models; `external`,
   * a `gateway projections run` worker does, and this process only follows its checkpoints (Postgres only). */
  readonly projections: 'in-process' | 'external';
  /** SMTP_URL (`smtp://user:pass@host:587`, `smtps://…`): mail to account holders through it; unset,
   * mails are written to DATA_DIR/outbox and their links logged (src/mail). */
  readonly smtpUrl: string | undefined;
  /** MAIL_FROM: the sender of those mails (default `Model gateway <gateway@localhost>`). */
  readonly mailFrom: string;
  /** RESPONSES_WEBSOCKET / RESPONSES_WEBSOCKET_IDLE_S (src/http/protocols/responses-socket.ts); absent: the defaults. */
  readonly responsesSocket?: ResponsesSocketSettings;
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
    uploadSpoolLimitMb: uploadSpoolLimitOf(blank(env.UPLOAD_SPOOL_LIMIT_MB)),
    embeddedDatabase: embeddedDatabaseOf(blank(env.EMBEDDED_DATABASE)),
    pgliteSharedBuffersMb: sharedBuffersOf(blank(env.PGLITE_SHARED_BUFFERS_MB)),
    projections: projectionsOf(blank(env.PROJECTIONS), blank(env.DATABASE_URL)),
    smtpUrl: smtpUrlOf(blank(env.SMTP_URL)),
    mailFrom: blank(env.MAIL_FROM) ?? 'Model gateway <gateway@localhost>',
    responsesSocket: setting(() => responsesSocketSettingsOf(env)),
    env,
  };
}

function smtpUrlOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!URL.canParse(value) || !['smtp:', 'smtps:'].includes(new URL(value).protocol))
    throw new SettingError('SMTP_URL must be an smtp:// or smtps:// URL (smtp://user:password@host:587)');
  return value;
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

function embeddedDatabaseOf(value: string | undefined): Settings['embeddedDatabase'] {
  if (value === undefined || value === 'postgres' || value === 'pglite') return value;
  throw new SettingError(`EMBEDDED_DATABASE must be "postgres" or "pglite", not "${value}"`);
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

/** Whole MB, at least 2 (one account may take half) and at most 1 TiB. */
function uploadSpoolLimitOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_UPLOAD_SPOOL_LIMIT_MB;
  const mb = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(mb >= 2 && mb <= 1_048_576)) throw new SettingError(`UPLOAD_SPOOL_LIMIT_MB must be a whole number of MB from 2 to 1048576, not "${value}"`);
  return mb;
}

/** Whole MB from 1 to 1024 (PGlite's memory is a 32-bit WASM heap of at most 2 GB). */
function sharedBuffersOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_PGLITE_SHARED_BUFFERS_MB;
  const mb = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(mb >= 1 && mb <= 1024)) throw new SettingError(`PGLITE_SHARED_BUFFERS_MB must be a whole number of MB from 1 to 1024, not "${value}"`);
  return mb;
}

/** A secret from the environment, else the one generated into DATA_DIR on first start. */
export function persistentSecret(dataDir: string, file: string, fromEnv: string | undefined, make: () => string) {
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
