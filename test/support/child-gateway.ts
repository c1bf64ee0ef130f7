import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { settingsFromEnv } from '../../src/runtime/settings';
import { EMBEDDED_POSTGRES_DIR, openEmbeddedDatabase } from '../../src/runtime/storage';
import { stopLeftServer } from '../../src/storage/embedded-postgres';
import { postgresSql, type Sql } from '../../src/storage/sql';

const BIN = join(import.meta.dirname, '../../bin/gateway.mjs');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The gateway as a user runs it: `bin/gateway.mjs` in a child process, with its own
 * DATA_DIR, port and simulator port, on PGlite or (when DATABASE_URL is set) on a
 * database of its own that is dropped afterwards.
 */
export class ChildGateway {
  private server: ChildProcess | null = null;
  /** What the running (or last) `serve` printed, stdout and stderr. */
  output = '';

  private constructor(
    readonly env: NodeJS.ProcessEnv,
    readonly base: string,
    readonly dataDir: string,
    private readonly database: string | null,
  ) {}

  /** `databaseUrl`: a database the caller owns (not created or dropped here); `env`: more variables. */
  static async prepare(options: { databaseUrl?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ChildGateway> {
    const dataDir = mkdtempSync(join(tmpdir(), 'gateway-e2e-'));
    // As root the embedded Postgres server runs as the `postgres` user, which must reach DATA_DIR.
    if (process.getuid?.() === 0) chmodSync(dataDir, 0o711);
    const port = await freePort();
    // The demo config's simulator gets its own port, so parallel test files do not share one.
    const simulatorPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      SIMULATOR_URL: `http://127.0.0.1:${simulatorPort}`,
    };
    for (const name of ['ADMIN_TOKEN', 'EVENTSTORE_URL', 'GATEWAY_CONFIG', 'GATEWAY_URL', 'PUBLIC_BASE_URL', 'S3_BUCKET']) delete env[name];
    Object.assign(env, options.env);
    let database: string | null = null;
    if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl;
    else if (process.env.DATABASE_URL) {
      database = `gw_e2e_${randomBytes(4).toString('hex')}`;
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      await client.query(`CREATE DATABASE ${database}`);
      await client.end();
      const url = new URL(process.env.DATABASE_URL);
      url.pathname = `/${database}`;
      env.DATABASE_URL = url.toString();
    }
    return new ChildGateway(env, `http://127.0.0.1:${port}`, dataDir, database);
  }

  /** Its database, opened from the test (embedded: only while the server is stopped); close it after use. */
  async openDatabase(): Promise<Sql> {
    if (this.env.DATABASE_URL) return postgresSql(this.env.DATABASE_URL);
    // The embedded database the gateway would open (its server started for the test, stopped on close).
    return (await openEmbeddedDatabase(settingsFromEnv(this.env))).sql;
  }

  get running(): boolean {
    return this.server !== null;
  }

  /** The running server's process id (to pause it with SIGSTOP, say); undefined when none runs. */
  get pid(): number | undefined {
    return this.server?.pid;
  }

  /** The server was started and has not exited. */
  get alive(): boolean {
    return this.server !== null && this.server.exitCode === null && this.server.signalCode === null;
  }

  /** A CLI command against this gateway's environment (with `env` on top). */
  run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CommandResult> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], { env: { ...this.env, ...env } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** An account and a key for it, through the CLI (`accounts create`, `keys create`), as the README shows. */
  async accountWithKey(name: string, keyName = 'laptop'): Promise<{ accountId: string; key: string }> {
    const account = await this.run(['accounts', 'create', name]);
    if (account.code !== 0) throw new Error(`accounts create: ${account.code}\n${account.stderr}`);
    const accountId = JSON.parse(account.stdout).id as string;
    const key = await this.run(['keys', 'create', accountId, '--name', keyName]);
    if (key.code !== 0) throw new Error(`keys create: ${key.code}\n${key.stderr}`);
    return { accountId, key: JSON.parse(key.stdout).key as string };
  }

  /** Starts `serve`; resolves with the admin token (printed when this start generated it, else
   * ADMIN_TOKEN or the one saved in DATA_DIR, like an operator would find it). */
  start(): Promise<string> {
    const child = spawn(process.execPath, [BIN, 'serve'], { env: this.env });
    this.server = child;
    this.output = '';
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${this.output}`)), 60_000);
      child.stdout!.on('data', (d: Buffer) => {
        this.output += d;
        const line = /admin token: (.*)\n/.exec(this.output);
        if (line) {
          clearTimeout(timer);
          const printed = /^(adm_\S+)/.exec(line[1]!);
          // Printed when generated; else from ADMIN_TOKEN, or saved in DATA_DIR, as an operator finds it.
          resolve(printed ? printed[1]! : (this.env.ADMIN_TOKEN ?? readFileSync(join(this.dataDir, 'admin-token'), 'utf8').trim()));
        }
      });
      child.stderr!.on('data', (d) => (this.output += d));
      child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${this.output}`)));
    });
  }

  /** Resolves when the server process ends by itself (a crash test's fault point); its signal. */
  async exited(): Promise<NodeJS.Signals | null> {
    const server = this.server;
    if (!server) return null;
    const signal = server.exitCode !== null || server.signalCode !== null ? server.signalCode : await new Promise<NodeJS.Signals | null>((r) => server.once('exit', (_code, sig) => r(sig)));
    this.server = null;
    return signal;
  }

  /** Sends `signal` to the running server; resolves with how it exited (its code, or the signal that ended it). */
  async terminate(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const server = this.server;
    if (!server) throw new Error('the server is not running');
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => server.once('exit', (code, sig) => resolve({ code, signal: sig })));
    server.kill(signal);
    const outcome = await exited;
    this.server = null;
    return outcome;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    if (!this.alive) {
      this.server = null;
      return;
    }
    const exited = new Promise((r) => this.server!.once('exit', r));
    this.server.kill('SIGTERM');
    await exited;
    this.server = null;
  }

  async cleanup(): Promise<void> {
    await this.stop();
    // A gateway killed by the test leaves its embedded server running (as a crash would).
    await stopLeftServer(join(this.dataDir, EMBEDDED_POSTGRES_DIR), 'SIGQUIT');
    rmSync(this.dataDir, { recursive: true, force: true });
    if (this.database) {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${this.database} WITH (FORCE)`);
      await client.end();
    }
  }
}
