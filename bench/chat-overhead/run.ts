/**
 * Chat-completions overhead benchmark (issue 3, item 8). Run by hand, never by CI:
 *
 *   node --import tsx bench/chat-overhead/run.ts [--duration 10] [--warmup 2] [--only REGEX]
 *        [--out DIR] [--cpu-prof] [--no-diag] [--keep-db]
 *
 * What it does: creates a fresh Postgres database, writes a GATEWAY_CONFIG with one chat model
 * served by the upstream simulator, starts the simulator (core 0) and the gateway (core 1, with
 * DATABASE_URL, REDIS_URL, LOG_LEVEL=warn), pins itself (the load generator) and the database's
 * Postgres backends to core 0, creates an account + key through the admin API, and measures the
 * gateway and the simulator directly (the baseline), non-streaming and streaming, at 1, 50 and 200
 * connections and at a steady 500 requests/s. Then it counts the SQL statements per request with a
 * separately started gateway, stops everything and drops the database. See README.md.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:net';
import pg from 'pg';
import { closedLoop, openLoop, type RunResult, type Target } from './loadgen';

// ---------------------------------------------------------------- options

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const flag = (name: string) => process.argv.includes(`--${name}`);

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DURATION_MS = Number(arg('duration', '10')) * 1000;
const WARMUP_MS = Number(arg('warmup', '2')) * 1000;
const ONLY = arg('only') ? new RegExp(arg('only')!) : null;
const CPU_PROF = flag('cpu-prof');
const DIAG = !flag('no-diag');
const KEEP_DB = flag('keep-db');
/** before each timed run, wait (up to --quiet-wait seconds) until other processes use less than this many cores */
const QUIET_CORES = Number(arg('quiet', '0.3'));
const QUIET_WAIT_MS = Number(arg('quiet-wait', '90')) * 1000;
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const STAMP = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
const OUT = resolve(arg('out') ?? join(tmpdir(), `chat-overhead-${STAMP}`));
const GATEWAY_CORE = '1';
const LOAD_CORE = '0';
const RATE = 500;
const ADMIN_TOKEN = `adm_bench_${Math.random().toString(36).slice(2)}`;
const MODEL = 'bench-mini';
const USER_TEXT = 'Say hello to the benchmark.';

const dbName = `bench_chat_${STAMP.replace('-', '_')}_${process.pid}`;
const log = (...parts: unknown[]) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);

// ---------------------------------------------------------------- /proc helpers

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim() || 100);

/** utime + stime of a process (all its threads), in ms. */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** utime and stime of a process separately, in ms. */
function cpuSplitMs(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) * TICK_MS, system: Number(fields[12]) * TICK_MS };
  } catch {
    return { user: 0, system: 0 };
  }
}

/** CPU time of the whole machine (all cores, every process), busy ms. */
function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return ((v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0) + (v[5] ?? 0) + (v[6] ?? 0) + (v[7] ?? 0)) * TICK_MS;
}

function memKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) : NaN;
}

function pin(pid: number, core: string) {
  execFileSync('taskset', ['-a', '-p', '-c', core, String(pid)], { stdio: 'ignore' });
}

// ---------------------------------------------------------------- processes

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const children = new Set<ChildProcess>();

/** Spawns `taskset -c core <cmd>` and resolves once a stdout line matches `ready`. */
async function start(name: string, core: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
  const child = spawn('taskset', ['-c', core, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const logFile = createWriteStream(join(OUT, `${name}.log`), { flags: 'a' });
  child.stderr!.pipe(logFile);
  let seen = '';
  await new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 90 s; see ${join(OUT, `${name}.log`)}`)), 90_000);
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
      reject(new Error(`${name} exited with ${code} before it was ready; see ${join(OUT, `${name}.log`)}`));
    });
  });
  child.stdout!.removeAllListeners('data');
  child.stdout!.pipe(logFile);
  return child;
}

async function stop(child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------- gateway admin API

async function admin<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`admin ${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

async function newAccountKey(base: string, name: string): Promise<{ accountId: string; key: string }> {
  const account = await admin<{ id: string }>(base, 'POST', '/accounts', { name });
  await admin(base, 'POST', `/accounts/${account.id}/topups`, { amount_usd: '100000', reference: `bench ${name}` });
  const key = await admin<{ key: string }>(base, 'POST', `/accounts/${account.id}/keys`, { name: 'bench' });
  return { accountId: account.id, key: key.key };
}

// ---------------------------------------------------------------- measurements

type Mode = 'nonstream' | 'stream';
type Side = 'direct' | 'gateway';
interface Load {
  readonly name: string;
  readonly connections?: number;
  readonly rate?: number;
}
const LOADS: Load[] = [{ name: 'c1', connections: 1 }, { name: 'c50', connections: 50 }, { name: 'c200', connections: 200 }, { name: `r${RATE}`, rate: RATE }];

interface Measurement {
  readonly name: string;
  readonly mode: Mode;
  readonly load: string;
  readonly side: Side;
  readonly loadavgBefore: number[];
  readonly result: RunResult;
  /** gateway process CPU during the timed run, ms per successful request */
  readonly gatewayCpuMsPerReq: number;
  /** the same including the projection catch-up after the run (gateway runs) */
  readonly gatewayCpuMsPerReqWithCatchUp: number | null;
  /** seconds the projections needed after the run to apply everything it wrote */
  readonly projectionLagS: number | null;
  /** CPU of the simulator, of this process (load generator) and of the database's Postgres backends, ms per request */
  readonly simulatorCpuMsPerReq: number;
  readonly loadgenCpuMsPerReq: number;
  readonly postgresCpuMsPerReq: number;
  /** gateway process: utilisation of its core during the run (0..1) */
  readonly gatewayCoreBusy: number;
  /** core 0 (simulator + load generator + Postgres): utilisation during the run (0..1) */
  readonly loadCoreBusy: number;
  /** CPU used by processes that are not part of the benchmark during the run, in cores (0..2): noise */
  readonly otherCores: number;
  /** seconds waited for other processes to quiet down before the run */
  readonly quietWaitS: number;
  /** gateway CPU split: user / system ms per request */
  readonly gatewayUserMsPerReq: number;
  readonly gatewaySystemMsPerReq: number;
  readonly gatewayVmHwmMb: number;
  readonly gatewayVmRssMb: number;
  /** events appended per successful request (gateway runs) */
  readonly eventsPerReq: number | null;
  /** CLOCK_MONOTONIC µs at the start and end of the timed run (the clock of V8's .cpuprofile timestamps) */
  readonly monotonicUs: [number, number];
}

async function main() {
  mkdirSync(OUT, { recursive: true });
  if (cpus().length < 2) throw new Error('needs at least 2 cores (gateway on core 1, everything else on core 0)');
  pin(process.pid, LOAD_CORE);
  log(`output: ${OUT}`);

  // -------- database
  const adminDb = new pg.Client({ connectionString: PG_ADMIN_URL });
  await adminDb.connect();
  await adminDb.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const DATABASE_URL = dbUrl.toString();
  log(`database ${dbName} created`);

  const work = mkdtempSync(join(tmpdir(), 'chat-overhead-'));
  let gateway: ChildProcess | null = null;
  let simulator: ChildProcess | null = null;
  let db: pg.Client | null = null;
  try {
    // -------- simulator (core 0)
    const simPort = await freePort();
    simulator = await start('simulator', LOAD_CORE, [process.execPath, '--import', 'tsx', 'bench/chat-overhead/simulator.ts', '--port', String(simPort)], { ...process.env }, /listening on/);
    const simUrl = `http://127.0.0.1:${simPort}`;
    log(`simulator ${simUrl} (pid ${simulator.pid}, core ${LOAD_CORE})`);

    // -------- gateway config + gateway (core 1)
    const configPath = join(work, 'gateway-config.json');
    writeFileSync(
      configPath,
      JSON.stringify(
        {
          channels: [{ id: 'sim', protocol: 'chat-completions', base_url: simUrl, api_key: 'sim-key', models: [MODEL] }],
          models: [
            {
              id: MODEL,
              owned_by: 'bench',
              kind: 'text',
              default_max_tokens: 1024,
              context_window: 128000,
              price: { input: '0.15', cached_input: '0.075', output: '0.60' },
            },
          ],
        },
        null,
        2,
      ),
    );
    const gwPort = await freePort();
    const gatewayEnv = (dataDir: string): NodeJS.ProcessEnv => ({
      ...process.env,
      PORT: String(gwPort),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DATABASE_URL,
      REDIS_URL,
      GATEWAY_CONFIG: configPath,
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
    });
    const nodeFlags = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(OUT, 'cpu-prof')}`] : [];
    gateway = await start('gateway', GATEWAY_CORE, [process.execPath, ...nodeFlags, 'bin/gateway.mjs', 'serve'], gatewayEnv(join(work, 'data')), /gateway listening on/);
    const gwUrl = `http://127.0.0.1:${gwPort}`;
    const gwPid = gateway.pid!;
    log(`gateway ${gwUrl} (pid ${gwPid}, core ${GATEWAY_CORE})${CPU_PROF ? ' with --cpu-prof' : ''}`);

    db = new pg.Client({ connectionString: DATABASE_URL });
    await db.connect();
    const dbc = db;

    const pgBackends = async (): Promise<number[]> =>
      (await dbc.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [dbName])).rows.map((r) => r.pid);
    const pinBackends = async () => {
      for (const pid of await pgBackends()) {
        try {
          pin(pid, LOAD_CORE);
        } catch {
          /* a backend that just ended */
        }
      }
    };
    const backendCpu = async (): Promise<Map<number, number>> => new Map((await pgBackends()).map((pid) => [pid, cpuMs(pid)]));
    /** Our own processes' CPU right now (gateway, simulator, this process, the database's backends). */
    const oursMs = async () => {
      let pgMs = 0;
      for (const ms of (await backendCpu()).values()) pgMs += ms;
      const self = process.cpuUsage();
      return cpuMs(gateway!.pid!) + cpuMs(simulator!.pid!) + (self.user + self.system) / 1000 + pgMs;
    };
    /** Waits until processes outside the benchmark use less than QUIET_CORES (sampled over 1 s). */
    const waitQuiet = async (): Promise<number> => {
      const t0 = performance.now();
      for (;;) {
        const m0 = machineBusyMs();
        const o0 = await oursMs();
        const w0 = performance.now();
        await sleep(1000);
        const other = (machineBusyMs() - m0 - ((await oursMs()) - o0)) / (performance.now() - w0);
        if (other < QUIET_CORES) return (performance.now() - t0) / 1000;
        if (performance.now() - t0 > QUIET_WAIT_MS) {
          log(`other processes still use ${other.toFixed(2)} cores after ${QUIET_WAIT_MS / 1000} s; measuring anyway`);
          return (performance.now() - t0) / 1000;
        }
      }
    };
    const lastEvent = async () => {
      const { rows } = await dbc.query<{ t: string; g: string }>(
        'SELECT transaction_id::text AS t, global_position::text AS g FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1',
      );
      return rows[0] ? { t: BigInt(rows[0].t), g: BigInt(rows[0].g) } : null;
    };
    /** Waits until every projection has applied the last event; returns the seconds it took. */
    const catchUp = async (): Promise<number> => {
      const t0 = performance.now();
      const last = await lastEvent();
      if (!last) return 0;
      for (;;) {
        const { rows } = await dbc.query<{ behind: string }>(
          `SELECT count(*)::text AS behind FROM projection_checkpoints
            WHERE (commit_position, prepare_position) < ($1::bigint, $2::bigint)`,
          [String(last.t), String(last.g)],
        );
        if (rows[0]!.behind === '0') return (performance.now() - t0) / 1000;
        if (performance.now() - t0 > 300_000) throw new Error('projections did not catch up in 300 s');
        await sleep(50);
      }
    };

    // -------- account + key through the admin API
    const acct = await newAccountKey(gwUrl, 'bench');
    log(`account ${acct.accountId}, key ${acct.key.slice(0, 12)}…`);

    const bodyOf = (stream: boolean) =>
      JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: USER_TEXT }], ...(stream ? { stream: true } : {}) });
    const targetOf = (side: Side, mode: Mode, keys: string[] = [acct.key]): Target => ({
      origin: side === 'gateway' ? gwUrl : simUrl,
      path: '/v1/chat/completions',
      headers:
        side === 'gateway'
          ? (n) => ({ 'content-type': 'application/json', authorization: `Bearer ${keys[n % keys.length]}` })
          : () => ({ 'content-type': 'application/json', authorization: 'Bearer sim-key' }),
      body: bodyOf(mode === 'stream'),
      stream: mode === 'stream',
    });

    // -------- sanity: one call of each kind, billed, with a call-log row
    const balanceOf = async () => (await admin<{ balance_usd: string }>(gwUrl, 'GET', `/accounts/${acct.accountId}`)).balance_usd;
    const before = await balanceOf();
    const sanity: Record<string, string> = {};
    for (const [side, mode] of [['direct', 'nonstream'], ['gateway', 'nonstream'], ['direct', 'stream'], ['gateway', 'stream']] as const) {
      const t = targetOf(side, mode);
      const res = await fetch(`${t.origin}${t.path}`, { method: 'POST', headers: t.headers(0), body: t.body });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`sanity ${side} ${mode}: HTTP ${res.status} ${text}`);
      sanity[`${side} ${mode}`] = text.length > 1200 ? `${text.slice(0, 1200)}…` : text;
    }
    await catchUp();
    const after = await balanceOf();
    const callLogRows = await dbc.query<{ n: string }>('SELECT count(*)::text AS n FROM call_log').then(
      (r) => r.rows[0]!.n,
      () => 'n/a (no call_log table)',
    );
    log(`sanity: balance ${before} -> ${after}; call_log rows: ${callLogRows}`);
    writeFileSync(join(OUT, 'sanity.json'), JSON.stringify({ balanceBefore: before, balanceAfter: after, callLogRows, responses: sanity }, null, 2));

    // -------- the measured runs
    const measurements: Measurement[] = [];
    const runOne = async (name: string, mode: Mode, load: Load, side: Side, target: Target): Promise<void> => {
      if (ONLY && !ONLY.test(name)) return;
      log(`${name}: warm-up ${WARMUP_MS / 1000} s`);
      if (load.rate) await openLoop(target, load.rate, WARMUP_MS, 512, false);
      else await closedLoop(target, load.connections!, WARMUP_MS, false);
      if (side === 'gateway') await catchUp();
      await pinBackends();
      const quietWaitS = await waitQuiet();
      const loadavgBefore = loadavg().map((v) => Math.round(v * 100) / 100);
      const events0 = side === 'gateway' ? await lastEvent() : null;
      const gw0 = cpuMs(gwPid);
      const gwSplit0 = cpuSplitMs(gwPid);
      const sim0 = cpuMs(simulator!.pid!);
      const pg0 = await backendCpu();
      const self0 = process.cpuUsage();
      const machine0 = machineBusyMs();
      const t0 = performance.now();
      const mono0 = Number(process.hrtime.bigint() / 1000n);
      log(`${name}: ${DURATION_MS / 1000} s (loadavg ${loadavgBefore.join(' ')})`);
      const result = load.rate ? await openLoop(target, load.rate, DURATION_MS, 512) : await closedLoop(target, load.connections!, DURATION_MS);
      const wall = performance.now() - t0;
      const mono1 = Number(process.hrtime.bigint() / 1000n);
      const gw1 = cpuMs(gwPid);
      const gwSplit1 = cpuSplitMs(gwPid);
      const sim1 = cpuMs(simulator!.pid!);
      const self1 = process.cpuUsage(self0);
      const machine1 = machineBusyMs();
      const pg1 = await backendCpu();
      const events1 = side === 'gateway' ? await lastEvent() : null;
      const lag = side === 'gateway' ? await catchUp() : null;
      const gw2 = cpuMs(gwPid);
      let pgDelta = 0;
      for (const [pid, ms] of pg1) pgDelta += ms - (pg0.get(pid) ?? 0);
      const per = (ms: number) => (result.ok > 0 ? ms / result.ok : NaN);
      const selfMs = (self1.user + self1.system) / 1000;
      const m: Measurement = {
        name,
        mode,
        load: load.name,
        side,
        loadavgBefore,
        result,
        gatewayCpuMsPerReq: per(gw1 - gw0),
        gatewayCpuMsPerReqWithCatchUp: side === 'gateway' ? per(gw2 - gw0) : null,
        projectionLagS: lag,
        simulatorCpuMsPerReq: per(sim1 - sim0),
        loadgenCpuMsPerReq: per(selfMs),
        postgresCpuMsPerReq: per(pgDelta),
        gatewayCoreBusy: (gw1 - gw0) / wall,
        loadCoreBusy: (sim1 - sim0 + selfMs + pgDelta) / wall,
        otherCores: Math.max(0, machine1 - machine0 - (gw1 - gw0) - (sim1 - sim0) - selfMs - pgDelta) / wall,
        quietWaitS,
        gatewayUserMsPerReq: per(gwSplit1.user - gwSplit0.user),
        gatewaySystemMsPerReq: per(gwSplit1.system - gwSplit0.system),
        gatewayVmHwmMb: memKb(gwPid, 'VmHWM') / 1024,
        gatewayVmRssMb: memKb(gwPid, 'VmRSS') / 1024,
        monotonicUs: [mono0, mono1],
        eventsPerReq: events0 && events1 && result.ok > 0 ? Number(events1.g - events0.g) / result.ok : null,
      };
      measurements.push(m);
      const r = result;
      log(
        `${name}: ${r.rps.toFixed(0)} req/s, p50 ${r.latency.p50.toFixed(3)} ms, p99 ${r.latency.p99.toFixed(3)} ms` +
          (mode === 'stream' ? `, ttfb p50 ${r.ttfb.p50.toFixed(3)} ms` : '') +
          `, errors ${r.errors}, gw cpu ${m.gatewayCpuMsPerReq.toFixed(3)} ms/req, core0 ${(m.loadCoreBusy * 100).toFixed(0)}%, other processes ${m.otherCores.toFixed(2)} cores` +
          (lag !== null ? `, projection lag ${lag.toFixed(1)} s` : ''),
      );
      if (r.errors > 0) log(`${name}: error samples: ${r.errorSamples.join(' | ')}`);
      writeFileSync(join(OUT, 'results.json'), JSON.stringify({ measurements }, null, 2));
    };

    await waitQuiet();
    const idleCpu0 = cpuMs(gwPid);
    const idleT0 = performance.now();
    await sleep(3000);
    const gatewayIdleCpu = (cpuMs(gwPid) - idleCpu0) / (performance.now() - idleT0);
    log(`gateway idle CPU: ${(gatewayIdleCpu * 100).toFixed(1)}% of a core`);

    for (const mode of ['nonstream', 'stream'] as const) {
      for (const load of LOADS) {
        for (const side of ['direct', 'gateway'] as const) {
          await runOne(`${mode}/${load.name}/${side}`, mode, load, side, targetOf(side, mode));
        }
      }
    }

    // -------- diagnostic: the same 50 connections spread over 50 accounts (one hot wallet or many)
    if (DIAG && (!ONLY || ONLY.test('nonstream/c50-50accounts/gateway'))) {
      log('creating 50 accounts for the many-wallets diagnostic');
      const keys: string[] = [];
      for (let i = 0; i < 50; i++) keys.push((await newAccountKey(gwUrl, `bench-${i}`)).key);
      await runOne('nonstream/c50-50accounts/gateway', 'nonstream', { name: 'c50-50accounts', connections: 50 }, 'gateway', targetOf('gateway', 'nonstream', keys));
    }

    const peakRssMb = memKb(gwPid, 'VmHWM') / 1024;
    log(`gateway peak RSS (VmHWM): ${peakRssMb.toFixed(1)} MB`);
    await stop(gateway);
    gateway = null;

    // -------- SQL statements per request: a second gateway with a query counter preloaded
    let queryCounts: Record<string, unknown> | null = null;
    if (DIAG && !ONLY) {
      const countFile = join(work, 'query-counts.json');
      gateway = await start(
        'gateway-count-queries',
        GATEWAY_CORE,
        [process.execPath, '--import', './bench/chat-overhead/count-queries.mjs', 'bin/gateway.mjs', 'serve'],
        { ...gatewayEnv(join(work, 'data')), COUNT_QUERIES_FILE: countFile },
        /gateway listening on/,
      );
      const counted = gateway;
      const snapshot = async (): Promise<Record<string, number>> => {
        counted.kill('SIGUSR2');
        await sleep(300);
        return JSON.parse(readFileSync(countFile, 'utf8')) as Record<string, number>;
      };
      queryCounts = {};
      for (const mode of ['nonstream', 'stream'] as const) {
        const target = targetOf('gateway', mode);
        await closedLoop(target, 1, 1000, false); // warm: key and wallet state cached
        await catchUp();
        const c0 = await snapshot();
        const t0 = performance.now();
        const r = await closedLoop(target, 1, 3000);
        const requestSeconds = (performance.now() - t0) / 1000;
        await catchUp();
        const c1 = await snapshot();
        const perRequest: Record<string, number> = {};
        for (const [sql, n] of Object.entries(c1)) {
          const d = n - (c0[sql] ?? 0);
          if (d > 0) perRequest[sql] = Math.round((d / r.ok) * 1000) / 1000;
        }
        queryCounts[mode] = { requests: r.ok, seconds: requestSeconds, perRequest };
        log(`query count ${mode}: ${Object.values(perRequest).reduce((a, b) => a + b, 0).toFixed(2)} statements per request (incl. projections)`);
      }
      await stop(gateway);
      gateway = null;
    }

    const summary = { machine: machine(), settings: { durationMs: DURATION_MS, warmupMs: WARMUP_MS, rate: RATE, cpuProf: CPU_PROF }, gatewayIdleCpu, peakRssMb, measurements, queryCounts };
    writeFileSync(join(OUT, 'results.json'), JSON.stringify(summary, null, 2));
    const md = report(summary);
    writeFileSync(join(OUT, 'results.md'), md);
    process.stdout.write(`\n${md}\n`);
    log(`results: ${join(OUT, 'results.json')}, ${join(OUT, 'results.md')}`);
  } finally {
    if (gateway) await stop(gateway);
    if (simulator) await stop(simulator);
    if (db) await db.end().catch(() => {});
    if (!KEEP_DB) {
      await adminDb.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((e: unknown) => log(`could not drop ${dbName}: ${String(e)}`));
      log(`database ${dbName} dropped`);
    } else log(`database ${dbName} kept (--keep-db)`);
    await adminDb.end();
    rmSync(work, { recursive: true, force: true });
  }
}

function machine() {
  const cpu = cpus();
  let pgVersion = '';
  try {
    pgVersion = execFileSync('psql', ['--version']).toString().trim();
  } catch {
    /* psql not installed */
  }
  return {
    cpu: `${cpu.length} × ${cpu[0]?.model ?? '?'}`,
    memMb: Math.round(Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) / 1024),
    kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(),
    node: process.version,
    postgres: pgVersion,
  };
}

// ---------------------------------------------------------------- report

type Summary = { measurements: Measurement[]; peakRssMb: number; gatewayIdleCpu: number };
const f = (v: number | null | undefined, d = 2) => (v === null || v === undefined || Number.isNaN(v) ? '–' : v.toFixed(d));

export function report(s: Summary): string {
  const get = (mode: string, load: string, side: Side) => s.measurements.find((m) => m.mode === mode && m.load === load && m.side === side);
  const lines: string[] = [];
  const loads = [...new Set(s.measurements.map((m) => m.load))];
  lines.push('### Non-streaming', '');
  lines.push('| load | direct req/s | gateway req/s | direct p50 / p99 ms | gateway p50 / p99 ms | added p50 ms | added p99 ms | gateway CPU ms/req (incl. projections) | gateway core busy | core 0 busy | projection lag s | errors (direct / gateway) |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const load of loads) {
    const d = get('nonstream', load, 'direct');
    const g = get('nonstream', load, 'gateway');
    if (!g && !d) continue;
    lines.push(
      `| ${load} | ${f(d?.result.rps, 0)} | ${f(g?.result.rps, 0)} | ${f(d?.result.latency.p50, 3)} / ${f(d?.result.latency.p99, 3)} | ${f(g?.result.latency.p50, 3)} / ${f(g?.result.latency.p99, 3)} | ` +
        `${d && g ? f(g.result.latency.p50 - d.result.latency.p50, 3) : '–'} | ${d && g ? f(g.result.latency.p99 - d.result.latency.p99, 3) : '–'} | ` +
        `${f(g?.gatewayCpuMsPerReq, 3)} (${f(g?.gatewayCpuMsPerReqWithCatchUp, 3)}) | ${g ? `${f(g.gatewayCoreBusy * 100, 0)}%` : '–'} | ${g ? `${f(g.loadCoreBusy * 100, 0)}%` : '–'} | ${f(g?.projectionLagS, 1)} | ${d?.result.errors ?? '–'} / ${g?.result.errors ?? '–'} |`,
    );
  }
  lines.push('', '### Streaming (`stream: true`)', '');
  lines.push('| load | direct req/s | gateway req/s | direct TTFB p50 / p99 ms | gateway TTFB p50 / p99 ms | added TTFB p50 / p99 ms | direct total p50 / p99 ms | gateway total p50 / p99 ms | added total p50 / p99 ms | gateway CPU ms/req (incl. projections) | gateway core busy | core 0 busy | projection lag s | errors (direct / gateway) |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const load of loads) {
    const d = get('stream', load, 'direct');
    const g = get('stream', load, 'gateway');
    if (!g && !d) continue;
    const diff = (a?: number, b?: number) => (a === undefined || b === undefined ? '–' : f(a - b, 3));
    lines.push(
      `| ${load} | ${f(d?.result.rps, 0)} | ${f(g?.result.rps, 0)} | ${f(d?.result.ttfb.p50, 3)} / ${f(d?.result.ttfb.p99, 3)} | ${f(g?.result.ttfb.p50, 3)} / ${f(g?.result.ttfb.p99, 3)} | ` +
        `${diff(g?.result.ttfb.p50, d?.result.ttfb.p50)} / ${diff(g?.result.ttfb.p99, d?.result.ttfb.p99)} | ` +
        `${f(d?.result.latency.p50, 3)} / ${f(d?.result.latency.p99, 3)} | ${f(g?.result.latency.p50, 3)} / ${f(g?.result.latency.p99, 3)} | ` +
        `${diff(g?.result.latency.p50, d?.result.latency.p50)} / ${diff(g?.result.latency.p99, d?.result.latency.p99)} | ` +
        `${f(g?.gatewayCpuMsPerReq, 3)} (${f(g?.gatewayCpuMsPerReqWithCatchUp, 3)}) | ${g ? `${f(g.gatewayCoreBusy * 100, 0)}%` : '–'} | ${g ? `${f(g.loadCoreBusy * 100, 0)}%` : '–'} | ${f(g?.projectionLagS, 1)} | ${d?.result.errors ?? '–'} / ${g?.result.errors ?? '–'} |`,
    );
  }
  lines.push('', '### Per run', '');
  lines.push('| run | req/s | ok | errors | p50 ms | p99 ms | max ms | TTFB p50 ms | gateway CPU ms/req (user + sys) | Postgres CPU ms/req | simulator CPU ms/req | load generator CPU ms/req | events/req | gateway RSS / peak MB | other processes, cores |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const m of s.measurements) {
    const r = m.result;
    lines.push(
      `| ${m.name} | ${f(r.rps, 0)} | ${r.ok} | ${r.errors} | ${f(r.latency.p50, 3)} | ${f(r.latency.p99, 3)} | ${f(r.latency.max, 1)} | ${m.mode === 'stream' ? f(r.ttfb.p50, 3) : '–'} | ` +
        `${m.side === 'gateway' ? `${f(m.gatewayCpuMsPerReq, 3)} (${f(m.gatewayUserMsPerReq, 2)} + ${f(m.gatewaySystemMsPerReq, 2)})` : '–'} | ${f(m.postgresCpuMsPerReq, 3)} | ${f(m.simulatorCpuMsPerReq, 3)} | ${f(m.loadgenCpuMsPerReq, 3)} | ${f(m.eventsPerReq, 2)} | ${f(m.gatewayVmRssMb, 0)} / ${f(m.gatewayVmHwmMb, 0)} | ${f(m.otherCores, 2)} |`,
    );
  }
  lines.push('', `Gateway peak RSS (VmHWM over the whole run): **${f(s.peakRssMb, 1)} MB**; gateway CPU while idle: ${f(s.gatewayIdleCpu * 100, 1)}% of a core.`);
  return lines.join('\n');
}

const stopAll = () => {
  for (const child of children) child.kill('SIGKILL');
};
process.on('SIGINT', () => {
  stopAll();
  if (KEEP_DB) process.exit(130);
  const c = new pg.Client({ connectionString: PG_ADMIN_URL });
  void c
    .connect()
    .then(() => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`))
    .then(() => log(`interrupted; database ${dbName} dropped`))
    .catch((e: unknown) => log(`interrupted; could not drop ${dbName}: ${String(e)}`))
    .finally(() => process.exit(130));
});

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  stopAll();
  process.exitCode = 1;
});
