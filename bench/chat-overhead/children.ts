/**
 * The benchmarks' child processes (simulator, targets): pinned to a core with `taskset`, their output in a
 * log file, ready once their stdout says so; the gateway config and node flags they run with. Shared by run.ts,
 * side-by-side.ts, sizing.ts, tail-probe.ts and bench/ledger-scale/cold-start.ts; run by hand, never by CI.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** Moves a running process, every thread of it, to one core (`taskset -a -p`). */
export function pinToCore(pid: number, core: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', core, String(pid)], { stdio: 'ignore' });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

export class Children {
  /** Every child still running (killed with SIGKILL by `killAll`, e.g. on Ctrl-C). */
  readonly running = new Set<ChildProcess>();

  constructor(
    private readonly cwd: string,
    /** Where each child's `<name>.log` goes. */
    private readonly logDir: string,
  ) {}

  /** Spawns `taskset -c core <args>` (`core` null: `<args>` unpinned, for machines without taskset) and
   * resolves once its stdout matches `ready` (90 s at most). */
  async start(name: string, core: string | null, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
    const [command, ...rest] = core === null ? args : ['taskset', '-c', core, ...args];
    const child = spawn(command!, rest, { cwd: this.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.running.add(child);
    child.on('exit', () => this.running.delete(child));
    const logPath = join(this.logDir, `${name}.log`);
    const logFile = createWriteStream(logPath, { flags: 'a' });
    child.stderr!.pipe(logFile);
    let seen = '';
    await new Promise<void>((resolveReady, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not start in 90 s; see ${logPath}`)), 90_000);
      child.stdout!.on('data', (chunk: Buffer) => {
        logFile.write(chunk);
        seen += chunk.toString();
        if (ready.test(seen)) {
          clearTimeout(timer);
          resolveReady();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited with ${code} before it was ready; see ${logPath}`));
      });
    });
    child.stdout!.removeAllListeners('data');
    child.stdout!.pipe(logFile);
    return child;
  }

  killAll(): void {
    for (const child of this.running) child.kill('SIGKILL');
  }
}

/** SIGTERM, then SIGKILL after `timeoutMs`; resolves once the child has exited. */
export async function stop(child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/** The one chat model every benchmark's gateway serves, on one channel to the simulator at `simUrl`. */
export const BENCH_MODEL = 'bench-mini';
export function benchConfig(simUrl: string) {
  return {
    channels: [{ id: 'sim', protocol: 'chat-completions', base_url: simUrl, api_key: 'sim-key', models: [BENCH_MODEL] }],
    models: [{ id: BENCH_MODEL, owned_by: 'bench', kind: 'text', default_max_tokens: 1024, context_window: 128000, price: { input: '0.15', cached_input: '0.075', output: '0.60' } }],
  };
}

/** A benchmark gateway's environment: this process's, with the gateway's own settings on top. */
export function gatewayEnv(settings: {
  port: number;
  dataDir: string;
  databaseUrl: string;
  redisUrl: string;
  configPath: string;
  adminToken: string;
}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PORT: String(settings.port),
    HOST: '127.0.0.1',
    DATA_DIR: settings.dataDir,
    DATABASE_URL: settings.databaseUrl,
    REDIS_URL: settings.redisUrl,
    GATEWAY_CONFIG: settings.configPath,
    ADMIN_TOKEN: settings.adminToken,
  };
}

/** The node flags of `npm start` (package.json), so that a benchmark runs the gateway as it ships. */
export function npmStartFlags(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  return pkg.scripts.start.split(/\s+/).filter((word) => word.startsWith('--'));
}

/** The upstream a benchmark's targets call: the bundled simulator (`simulator.ts`) or the fixed `node:http`
 * mock of issue 35's independent run (`fixed-upstream.ts`). */
export type UpstreamKind = 'simulator' | 'fixed';
export async function startUpstream(children: Children, kind: UpstreamKind, core: string | null): Promise<{ child: ChildProcess; url: string }> {
  if (kind !== 'simulator' && kind !== 'fixed') throw new Error(`--upstream is simulator or fixed, not ${String(kind)}`);
  const port = await freePort();
  const script = kind === 'fixed' ? 'bench/chat-overhead/fixed-upstream.ts' : 'bench/chat-overhead/simulator.ts';
  const child = await children.start(kind === 'fixed' ? 'fixed-upstream' : 'simulator', core, [process.execPath, '--import', 'tsx', script, '--port', String(port)], process.env, /listening on/);
  return { child, url: `http://127.0.0.1:${port}` };
}
