/**
 * A gateway as a benchmark target, as `npm start` runs it: npm start's node flags (package.json), the log
 * level given (npm start's default is `info`: one access line a call), in either storage mode: `postgres`
 * (DATABASE_URL + REDIS_URL) or `embedded`, the zero-setup default (a DATA_DIR of its own, no DATABASE_URL,
 * REDIS_URL or EVENTSTORE_URL: the gateway's own Postgres server under DATA_DIR/postgres where it can run,
 * else PGlite in its process; EMBEDDED_DATABASE from the caller's environment or `env` chooses). Then an
 * account, topped up, with one key through the admin API. Shared by side-by-side.ts and sizing.ts (`npm run bench`); run by hand, never by CI.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { type Children, freePort, gatewayEnv, npmStartFlags, pinToCore } from './children';

export type StorageMode = 'postgres' | 'embedded';

export interface GatewayOptions {
  readonly root: string;
  readonly children: Children;
  /** child name (its log is `<name>.log`) */
  readonly name: string;
  /** the core it is pinned to with taskset; null: not pinned */
  readonly core: string | null;
  readonly mode: StorageMode;
  /** an embedded gateway's DATA_DIR is made fresh under it; a Postgres one's DATA_DIR is `<workDir>/data` */
  readonly workDir: string;
  readonly configPath: string;
  readonly adminToken: string;
  /** postgres mode */
  readonly databaseUrl?: string;
  readonly redisUrl?: string;
  readonly logLevel: string;
  /** more node flags, after npm start's (later flags win) */
  readonly nodeFlags?: readonly string[];
  /** more environment (PROJECTIONS, LEDGER_CALL_COMMIT, …), after the mode's */
  readonly env?: NodeJS.ProcessEnv;
}

export interface StartedGateway {
  readonly child: ChildProcess;
  readonly origin: string;
  /** the environment it runs with (a `gateway projections run` worker beside it takes the same) */
  readonly env: NodeJS.ProcessEnv;
  /** `node` and its flags, without the command (`serve`) */
  readonly node: readonly string[];
  /** embedded mode: the pid of the gateway's own Postgres server (its postmaster); null on PGlite or Postgres mode */
  readonly databasePid: number | null;
}

export async function startGateway(o: GatewayOptions): Promise<StartedGateway> {
  const port = await freePort();
  const env = gatewayEnv({ port, dataDir: join(o.workDir, 'data'), databaseUrl: o.databaseUrl ?? '', redisUrl: o.redisUrl ?? '', configPath: o.configPath, adminToken: o.adminToken });
  if (o.mode === 'embedded') {
    env.DATA_DIR = mkdtempSync(join(o.workDir, 'embedded-'));
    // Run as root, the gateway starts its own server as the `postgres` user, who must be let through the
    // temporary directories (made 0700), else the gateway falls back to PGlite: not what npm start runs.
    for (const dir of [o.workDir, env.DATA_DIR]) chmodSync(dir, 0o711);
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'EVENTSTORE_URL', 'LEDGER_CALL_COMMIT', 'PROJECTIONS']) delete env[name];
  } else if (!o.databaseUrl || !o.redisUrl) {
    throw new Error('the postgres mode needs a DATABASE_URL and a REDIS_URL');
  }
  env.LOG_LEVEL = o.logLevel;
  Object.assign(env, o.env);
  const node = [process.execPath, ...npmStartFlags(o.root), ...(o.nodeFlags ?? []), 'bin/gateway.mjs'];
  const child = await o.children.start(o.name, o.core, [...node, 'serve'], env, /gateway listening on/);
  // src/runtime/storage.ts's EMBEDDED_POSTGRES_DIR; the first line of postmaster.pid is the server's pid.
  const pidFile = join(env.DATA_DIR!, 'postgres', 'postmaster.pid');
  const databasePid = o.mode === 'embedded' && existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : null;
  return { child, origin: `http://127.0.0.1:${port}`, env, node, databasePid };
}

/** An account topped up with 100,000 USD and one key (no limits), made through the admin API; the key. */
export async function accountWithKey(origin: string, adminToken: string, name: string): Promise<string> {
  const call = async <T>(path: string, payload: unknown): Promise<T> => {
    const res = await fetch(`${origin}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const account = await call<{ id: string }>('/accounts', { name });
  await call(`/accounts/${account.id}/topups`, { amount_usd: '100000', reference: 'bench' });
  return (await call<{ key: string }>(`/accounts/${account.id}/keys`, { name: 'bench' })).key;
}

/** A fresh database `<prefix>_<time>_<pid>` on the server of `serverUrl` (its role may CREATE DATABASE). */
export async function freshDatabase(serverUrl: string, prefix: string): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end();
    throw error;
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const drop = async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((error: Error) => process.stderr.write(`could not drop database ${name}: ${error.message}\n`));
    await admin.end().catch(() => undefined);
  };
  return { name, url: url.toString(), drop };
}

/** The pids of the Postgres backends serving database `name` (as the server numbers them). */
export async function backendPids(databaseUrl: string, name: string): Promise<number[]> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])).rows.map((r) => r.pid);
  } finally {
    await db.end();
  }
}

/** Pins the Postgres backends serving database `name` to a core (the load core, as issue 35's run had them). */
export async function pinBackends(databaseUrl: string, name: string, core: string): Promise<void> {
  for (const pid of await backendPids(databaseUrl, name)) {
    try {
      pinToCore(pid, core);
    } catch {
      /* gone */
    }
  }
}
