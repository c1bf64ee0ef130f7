import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './child-gateway';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Whether the Postgres server binaries are here (crash tests skip without them). */
export const postgresBinaries = existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_ctl'));

/** initdb and the server refuse to run as root: there they run as this user. */
const SERVER_USER = 'postgres';

/**
 * A Postgres cluster of a test's own, in a temporary directory on a free port, that the
 * test may restart, crash and stop (never the machine's shared server). `-m immediate`
 * stops the server the way a crash does: what the WAL writer had not yet written is lost.
 */
export class PrivatePostgres {
  private constructor(
    private readonly root: string,
    readonly port: number,
  ) {}

  private get dataDir() {
    return join(this.root, 'data');
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<PrivatePostgres> {
    const root = mkdtempSync(join(tmpdir(), 'gateway-pg-'));
    const cluster = new PrivatePostgres(root, await freePort());
    if (process.getuid?.() === 0) {
      const { uid, gid } = userIds(SERVER_USER);
      chownSync(root, uid, gid);
    }
    cluster.pgRun('initdb', ['-D', cluster.dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    await cluster.start();
    return cluster;
  }

  private pgRun(tool: string, args: string[]) {
    const command = join(BIN, tool);
    const asRoot = process.getuid?.() === 0;
    execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', SERVER_USER, '--', command, ...args] : args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.root} -c listen_addresses=127.0.0.1 -c max_connections=60 -c fsync=on`;
    this.pgRun('pg_ctl', ['-D', this.dataDir, '-o', options, '-l', join(this.root, 'server.log'), '-w', '-t', '60', 'start']);
    await this.ready();
  }

  /** `fast`: what an operator's restart does (connections are told the server is going down);
   * `immediate`: a crash, restarted with recovery from the WAL. */
  async restart(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    this.stop(mode);
    await this.start();
  }

  stop(mode: 'fast' | 'immediate' = 'fast'): void {
    this.pgRun('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
  }

  private async ready() {
    for (let i = 0; ; i++) {
      const client = new pg.Client({ connectionString: this.url });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch (error) {
        await client.end().catch(() => {});
        if (i > 100) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async destroy(): Promise<void> {
    try {
      this.stop('immediate');
    } catch {
      // Already stopped.
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

function userIds(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', name]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', name]).toString().trim());
  return { uid, gid };
}
