import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './child-gateway';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Whether the Postgres server binaries are here (crash tests skip without them). */
export const postgresBinaries = ['initdb', 'pg_ctl', 'pg_basebackup'].every((tool) => existsSync(join(BIN, tool)));

/** initdb and the server refuse to run as root: there they run as this user. */
const SERVER_USER = 'postgres';

/**
 * A Postgres cluster of a test's own, in a temporary directory on a free port, that the test
 * may restart, crash, fail over and stop (never the machine's shared server).
 * - `restart('fast')`: an operator's restart (connections are told the server is going down).
 * - `restart('immediate')`: a crash, then recovery from the WAL. The server's memory is lost, the
 *   machine's page cache is not: only the WAL not yet written out is lost (a few milliseconds).
 * - `cutStandby()`, later `failover()`: the server crashes and a streaming standby that stopped
 *   receiving at `cutStandby` is promoted in its place, on the same address (a managed database's
 *   failover to an asynchronous replica that lags): every commit since the cut, flushed or not, is gone.
 */
export class PrivatePostgres {
  private standbyDir: string | null = null;
  private standbyPort = 0;
  private generation = 0;

  private constructor(
    private readonly root: string,
    readonly port: number,
  ) {}

  private dataDir = '';

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
    cluster.dataDir = join(root, 'data0');
    await cluster.pgRun('initdb', ['-D', cluster.dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    await cluster.start();
    return cluster;
  }

  /** Asynchronous: a test's load goes on while the server stops and starts. */
  private async pgRun(tool: string, args: string[]) {
    const command = join(BIN, tool);
    const asRoot = process.getuid?.() === 0;
    await promisify(execFile)(asRoot ? 'runuser' : command, asRoot ? ['-u', SERVER_USER, '--', command, ...args] : args, { timeout: 60_000 });
  }

  private async startAt(dataDir: string, port: number) {
    // A standby dials a restarted server again within 100 ms (not 5 s), so it is behind only when told.
    const options = `-p ${port} -k ${this.root} -c listen_addresses=127.0.0.1 -c max_connections=60 -c wal_retrieve_retry_interval=100ms`;
    await this.pgRun('pg_ctl', ['-D', dataDir, '-o', options, '-l', join(this.root, `server-${port}.log`), '-w', '-t', '60', 'start']);
    await ready(`postgres://postgres@127.0.0.1:${port}/postgres`);
  }

  start(): Promise<void> {
    return this.startAt(this.dataDir, this.port);
  }

  async restart(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.stop(mode);
    await this.start();
  }

  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.pgRun('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
  }

  /** A streaming standby of the server, on a port of its own, for `failover`. */
  async addStandby(): Promise<void> {
    this.standbyDir = join(this.root, `data${++this.generation}`);
    this.standbyPort = await freePort();
    await this.pgRun('pg_basebackup', ['-D', this.standbyDir, '-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-R', '-X', 'stream', '--no-sync']);
    await this.startAt(this.standbyDir, this.standbyPort);
  }

  /** The standby stops receiving: from now on, what the server commits is not on the standby. */
  async cutStandby(): Promise<void> {
    if (!this.standbyDir) throw new Error('no standby: addStandby() first');
    const standby = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${this.standbyPort}/postgres` });
    await standby.connect();
    await standby.query(`ALTER SYSTEM SET primary_conninfo TO ''`);
    await standby.query('SELECT pg_reload_conf()');
    await standby.end();
  }

  /** The server crashes and the standby (cut off earlier) is promoted in its place, on its address. */
  async failover(): Promise<void> {
    if (!this.standbyDir) throw new Error('no standby: addStandby() first');
    await this.stop('immediate');
    await this.pgRun('pg_ctl', ['-D', this.standbyDir, '-w', '-t', '60', 'promote']);
    await this.pgRun('pg_ctl', ['-D', this.standbyDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
    this.dataDir = this.standbyDir;
    this.standbyDir = null;
    await this.start();
  }

  /** The server's processes: the postmaster and its children (one per connection, and its workers). */
  private processes(): number[] {
    const postmaster = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
        } catch {
          return false;
        }
      })
      .map(Number);
    return [postmaster, ...children];
  }

  /** A hung server: every process of it is paused, its connections stay open and nothing answers. */
  freeze(): void {
    for (const pid of this.processes()) process.kill(pid, 'SIGSTOP');
  }

  /** Undoes `freeze`. */
  thaw(): void {
    for (const pid of this.processes()) process.kill(pid, 'SIGCONT');
  }

  async destroy(): Promise<void> {
    for (const dir of [this.dataDir, this.standbyDir]) {
      if (!dir) continue;
      try {
        await this.pgRun('pg_ctl', ['-D', dir, '-m', 'immediate', '-w', '-t', '60', 'stop']);
      } catch {
        // Not running.
      }
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

async function ready(url: string) {
  for (let i = 0; ; i++) {
    const client = new pg.Client({ connectionString: url });
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

function userIds(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', name]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', name]).toString().trim());
  return { uid, gid };
}
