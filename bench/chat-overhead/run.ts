/**
 * Chat-completions overhead benchmark (issue 3, item 8). Run by hand, never by CI — see README.md:
 *
 *   node --import tsx bench/chat-overhead/run.ts [--duration 10] [--warmup 2] [--only REGEX]
 *        [--out DIR] [--cpu-prof] [--cpu-prof-interval US] [--gateway-flags 'FLAGS'] [--no-diag] [--keep-db]
 *        [--quiet 0.3] [--quiet-wait 60]
 *
 * Creates a fresh Postgres database, writes a GATEWAY_CONFIG with one chat model served by the
 * upstream simulator, starts the simulator (core 0) and the gateway (core 1; DATABASE_URL,
 * REDIS_URL, LOG_LEVEL=warn), pins itself (the load generator) and the database's Postgres
 * backends to core 0, creates an account + key through the admin API, and measures the gateway and
 * the simulator directly (the baseline), non-streaming and streaming, at 1, 50 and 200 connections
 * and at a steady 500 requests/s. Diagnostics follow (50 wallets instead of one; commits that do not
 * wait for the WAL flush; SQL statements per request). Everything is stopped and the database
 * dropped at the end.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { cpuMs, cpuSplitMs, machineBusyMs, memMb, threadCpuMs } from './proc';
import { BENCH_MODEL, benchConfig, Children, freePort, gatewayEnv, npmStartFlags, pinToCore, stop } from './children';
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
/** V8's sampling interval for --cpu-prof, in microseconds (V8's default is 1000). */
const CPU_PROF_INTERVAL = arg('cpu-prof-interval');
/** More node flags for the gateways, after npm start's (e.g. `--trace-gc`). */
const GATEWAY_FLAGS = arg('gateway-flags')?.split(/\s+/).filter(Boolean) ?? [];
const DIAG = !flag('no-diag');
const KEEP_DB = flag('keep-db');
/** before each timed run, wait (up to --quiet-wait s) until other processes use less than --quiet cores */
const QUIET_CORES = Number(arg('quiet', '0.3'));
const QUIET_WAIT_MS = Number(arg('quiet-wait', '60')) * 1000;
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const STAMP = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
const OUT = resolve(arg('out') ?? join(tmpdir(), `chat-overhead-${STAMP}`));
const GATEWAY_CORE = '1';
const LOAD_CORE = '0';
const RATE = 500;
const ADMIN_TOKEN = `adm_bench_${Math.random().toString(36).slice(2)}`;
const MODEL = BENCH_MODEL;
const USER_TEXT = 'Say hello to the benchmark.';
const START_FLAGS = npmStartFlags(ROOT);
const dbName = `bench_chat_${STAMP.replace('-', '_')}_${process.pid}`;

const log = (...parts: unknown[]) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);
const selected = (name: string) => !ONLY || ONLY.test(name);

/** Files under src/, config/, bin/ modified after `since` (ms): the gateway code must not change during a run. */
function changedSince(since: number): string[] {
  return sourceFiles()
    .filter((f) => f.mtimeMs > since)
    .map((f) => f.path);
}

function sourceFiles(): Array<{ path: string; mtimeMs: number }> {
  const files: Array<{ path: string; mtimeMs: number }> = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const rel = join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else files.push({ path: rel, mtimeMs: statSync(join(ROOT, rel)).mtimeMs });
    }
  };
  for (const dir of ['src', 'config', 'bin']) walk(dir);
  return files;
}

// ---------------------------------------------------------------- child processes

const processes = new Children(ROOT, OUT);
const start = processes.start.bind(processes);
const children = processes.running;

// ---------------------------------------------------------------- admin API

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
  /** c1, c50, c200, r500, or a diagnostic variant such as c50-50accounts */
  readonly name: string;
  /** the load of the main suite this one is compared with (its direct baseline) */
  readonly base: string;
  readonly connections?: number;
  readonly rate?: number;
}
const LOADS: Load[] = [
  { name: 'c1', base: 'c1', connections: 1 },
  { name: 'c50', base: 'c50', connections: 50 },
  { name: 'c200', base: 'c200', connections: 200 },
  { name: `r${RATE}`, base: `r${RATE}`, rate: RATE },
];

export interface Measurement {
  readonly name: string;
  readonly mode: Mode;
  readonly load: string;
  readonly base: string;
  readonly side: Side;
  readonly result: RunResult;
  /** gateway process CPU (utime + stime, all threads) during the timed run, ms per successful request */
  readonly gatewayCpuMsPerReq: number;
  readonly gatewayUserMsPerReq: number;
  readonly gatewaySystemMsPerReq: number;
  /** gateway CPU ms per request by thread name */
  readonly gatewayThreadsMsPerReq: Record<string, number>;
  /** the same including the projection catch-up after the run (gateway runs) */
  readonly gatewayCpuMsPerReqWithCatchUp: number | null;
  /** seconds after the run until the projections had applied everything it wrote (gateway runs) */
  readonly projectionLagS: number | null;
  /** CPU of the bench database's Postgres backends, the simulator and this process (the load generator), ms per request */
  readonly postgresCpuMsPerReq: number;
  readonly simulatorCpuMsPerReq: number;
  readonly loadgenCpuMsPerReq: number;
  /** share of its core the gateway used during the run (0..1) */
  readonly gatewayCoreBusy: number;
  /** share of core 0 used by the simulator + load generator + Postgres backends (0..1) */
  readonly loadCoreBusy: number;
  /** CPU used during the run by processes outside the benchmark, in cores (0..2): noise */
  readonly otherCores: number;
  readonly quietWaitS: number;
  readonly loadavgBefore: number[];
  readonly gatewayVmHwmMb: number;
  readonly gatewayVmRssMb: number;
  /** events appended per successful request (gateway runs) */
  readonly eventsPerReq: number | null;
  /** CLOCK_MONOTONIC µs at the start and end of the timed run (the clock of the .cpuprofile timestamps) */
  readonly monotonicUs: [number, number];
  /** what is special about this run (diagnostics) */
  readonly note?: string;
}

export interface QueryCount {
  readonly requests: number;
  /** statements per request by origin (request path, projections, hold sweeper) */
  readonly byOrigin: Record<string, number>;
  /** "<origin> | <sql>" -> statements per request */
  readonly perRequest: Record<string, number>;
}

export interface Summary {
  readonly startedAt: string;
  readonly machine: Record<string, string | number>;
  readonly settings: Record<string, unknown>;
  readonly gatewayIdleCpu: number;
  readonly gatewayRssAfterStartMb: number;
  readonly peakRssMb: number;
  readonly measurements: Measurement[];
  readonly queryCounts: Record<string, QueryCount> | null;
  /** the newest modification time of the gateway's sources when the run started: which code was measured */
  readonly sourceNewestMtime: string;
  /** gateway source files modified while the benchmark ran (the numbers then mix two versions) */
  readonly sourceChangedDuringRun: string[];
}

async function main() {
  mkdirSync(OUT, { recursive: true });
  if (cpus().length < 2) throw new Error('needs at least 2 cores (gateway on core 1, everything else on core 0)');
  pinToCore(process.pid, LOAD_CORE);
  log(`output: ${OUT}`);
  const startedAt = new Date().toISOString();
  const startedMs = Date.now();
  const sourceNewestMtime = new Date(Math.max(...sourceFiles().map((f) => f.mtimeMs))).toISOString();

  const adminDb = new pg.Client({ connectionString: PG_ADMIN_URL });
  await adminDb.connect();
  await adminDb.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const DATABASE_URL = dbUrl.toString();
  log(`database ${dbName} created`);

  const work = mkdtempSync(join(tmpdir(), 'chat-overhead-'));
  const gateways = new Set<ChildProcess>();
  let simulator: ChildProcess | null = null;
  let db: pg.Client | null = null;
  try {
    // -------- simulator (core 0)
    const simPort = await freePort();
    simulator = await start('simulator', LOAD_CORE, [process.execPath, '--import', 'tsx', 'bench/chat-overhead/simulator.ts', '--port', String(simPort)], { ...process.env }, /listening on/);
    const sim = simulator;
    const simUrl = `http://127.0.0.1:${simPort}`;
    log(`simulator ${simUrl} (pid ${sim.pid}, core ${LOAD_CORE})`);

    // -------- config + gateway (core 1)
    const configPath = join(work, 'gateway-config.json');
    writeFileSync(configPath, JSON.stringify(benchConfig(simUrl), null, 2));
    interface Gw {
      readonly name: string;
      readonly child: ChildProcess;
      readonly pid: number;
      readonly url: string;
    }
    const startGateway = async (name: string, nodeFlags: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Gw> => {
      const port = await freePort();
      const env: NodeJS.ProcessEnv = {
        ...gatewayEnv({ port, dataDir: join(work, 'data'), databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, configPath, adminToken: ADMIN_TOKEN }),
        LOG_LEVEL: 'warn',
        ...extraEnv,
      };
      const child = await start(name, GATEWAY_CORE, [process.execPath, ...START_FLAGS, ...GATEWAY_FLAGS, ...nodeFlags, 'bin/gateway.mjs', 'serve'], env, /gateway listening on/);
      gateways.add(child);
      child.once('exit', () => gateways.delete(child));
      const url = `http://127.0.0.1:${port}`;
      log(`${name} ${url} (pid ${child.pid}, core ${GATEWAY_CORE}) node ${[...START_FLAGS, ...GATEWAY_FLAGS, ...nodeFlags].join(' ')}${extraEnv.DATABASE_URL ? ` DATABASE_URL ${extraEnv.DATABASE_URL}` : ''}`);
      return { name, child, pid: child.pid!, url };
    };
    let primary = await startGateway(
      'gateway',
      CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(OUT, 'cpu-prof')}`, ...(CPU_PROF_INTERVAL ? [`--cpu-prof-interval=${CPU_PROF_INTERVAL}`] : [])] : [],
    );
    const gatewayRssAfterStartMb = memMb(primary.pid, 'VmRSS');

    db = new pg.Client({ connectionString: DATABASE_URL });
    await db.connect();
    const dbc = db;

    // -------- Postgres helpers
    const pgBackends = async (): Promise<number[]> =>
      (await dbc.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [dbName])).rows.map((r) => r.pid);
    const pinBackends = async () => {
      for (const pid of await pgBackends()) {
        try {
          pinToCore(pid, LOAD_CORE);
        } catch {
          /* a backend that just ended */
        }
      }
    };
    const backendCpu = async (): Promise<Map<number, number>> => new Map((await pgBackends()).map((pid) => [pid, cpuMs(pid)]));
    const oursMs = async () => {
      let pgMs = 0;
      for (const ms of (await backendCpu()).values()) pgMs += ms;
      const self = process.cpuUsage();
      let gwMs = 0;
      for (const child of gateways) gwMs += cpuMs(child.pid!);
      return gwMs + cpuMs(sim.pid!) + (self.user + self.system) / 1000 + pgMs;
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
    /** Waits until the gateway has stopped appending (settles of the last answers) and every projection has applied the last event. */
    const catchUp = async (): Promise<void> => {
      const t0 = performance.now();
      let last = await lastEvent();
      for (;;) {
        await sleep(100);
        const now = await lastEvent();
        if (now?.g === last?.g) break;
        last = now;
      }
      if (!last) return;
      for (;;) {
        const { rows } = await dbc.query<{ behind: string }>(
          'SELECT count(*)::text AS behind FROM projection_checkpoints WHERE (commit_position, prepare_position) < ($1::bigint, $2::bigint)',
          [String(last.t), String(last.g)],
        );
        if (rows[0]!.behind === '0') return;
        if (performance.now() - t0 > 300_000) throw new Error('projections did not catch up in 300 s');
        await sleep(50);
      }
    };

    // -------- account + key through the admin API
    const acct = await newAccountKey(primary.url, 'bench');
    log(`account ${acct.accountId}, key ${acct.key.slice(0, 12)}…`);
    const bodyOf = (stream: boolean) => JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: USER_TEXT }], ...(stream ? { stream: true } : {}) });
    const targetOf = (side: Side, mode: Mode, keys: string[] = [acct.key], gateway: Gw = primary): Target => ({
      origin: side === 'gateway' ? gateway.url : simUrl,
      path: '/v1/chat/completions',
      headers:
        side === 'gateway'
          ? (n) => ({ 'content-type': 'application/json', authorization: `Bearer ${keys[n % keys.length]}` })
          : () => ({ 'content-type': 'application/json', authorization: 'Bearer sim-key' }),
      body: bodyOf(mode === 'stream'),
      stream: mode === 'stream',
    });

    // -------- sanity: one call of each kind; the gateway's are billed and logged
    const balanceOf = async () => (await admin<{ balance_usd: string }>(primary.url, 'GET', `/accounts/${acct.accountId}`)).balance_usd;
    const balanceBefore = await balanceOf();
    const responses: Record<string, string> = {};
    for (const [side, mode] of [['direct', 'nonstream'], ['gateway', 'nonstream'], ['direct', 'stream'], ['gateway', 'stream']] as const) {
      const t = targetOf(side, mode);
      const res = await fetch(`${t.origin}${t.path}`, { method: 'POST', headers: t.headers(0), body: t.body });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`sanity ${side} ${mode}: HTTP ${res.status} ${text}`);
      responses[`${side} ${mode}`] = text.length > 1500 ? `${text.slice(0, 1500)}…` : text;
    }
    await catchUp();
    const balanceAfter = await balanceOf();
    const callLogRows = await dbc.query<{ n: string }>('SELECT count(*)::text AS n FROM call_log').then(
      (r) => r.rows[0]!.n,
      () => 'n/a (no call_log table)',
    );
    log(`sanity: balance ${balanceBefore} -> ${balanceAfter} after 2 gateway calls; call_log rows: ${callLogRows}`);
    writeFileSync(join(OUT, 'sanity.json'), JSON.stringify({ balanceBefore, balanceAfter, callLogRows, responses }, null, 2));

    // -------- one timed run
    const measurements: Measurement[] = [];
    let summary: Summary | null = null;
    const save = () => writeFileSync(join(OUT, 'results.json'), JSON.stringify(summary ?? { measurements }, null, 2));
    /**
     * Holds every projection checkpoint row locked (FOR UPDATE) from a connection of our own: the
     * gateway's projection runner blocks at its next batch, so the timed run measures the request
     * path alone. Released by the returned function.
     */
    const pauseProjections = async (): Promise<() => Promise<void>> => {
      const locker = new pg.Client({ connectionString: DATABASE_URL });
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('SELECT name FROM projection_checkpoints FOR UPDATE');
      return async () => {
        await locker.query('COMMIT');
        await locker.end();
      };
    };
    /** key of each gateway run's account, and how many calls it made */
    const runAccounts = new Map<string, { key: string; calls: number }>();
    /** A fresh account + key for one run, so that every run starts with an empty wallet history. */
    const freshTarget = (mode: Mode, label: string, gateway: Gw = primary) => async (): Promise<Target> => {
      const fresh = await newAccountKey(gateway.url, label);
      return targetOf('gateway', mode, [fresh.key], gateway);
    };
    const runOne = async (
      mode: Mode,
      load: Load,
      side: Side,
      targetOrFactory: Target | (() => Promise<Target>),
      gateway: Gw = primary,
      options: { pauseProjections?: boolean; note?: string } = {},
    ): Promise<void> => {
      const name = `${mode}/${load.name}/${side}`;
      if (!selected(name)) return;
      const target = typeof targetOrFactory === 'function' ? await targetOrFactory() : targetOrFactory;
      const pid = gateway.pid;
      log(`${name}: warm-up ${WARMUP_MS / 1000} s`);
      if (load.rate) await openLoop(target, load.rate, WARMUP_MS, 512, false);
      else await closedLoop(target, load.connections!, WARMUP_MS, false);
      if (side === 'gateway') await catchUp();
      const resume = options.pauseProjections ? await pauseProjections() : null;
      await pinBackends(); // connections opened during the warm-up
      const quietWaitS = await waitQuiet();
      const loadavgBefore = loadavg().map((v) => Math.round(v * 100) / 100);
      const events0 = side === 'gateway' ? await lastEvent() : null;
      const gw0 = cpuSplitMs(pid);
      const threads0 = threadCpuMs(pid);
      const sim0 = cpuMs(sim.pid!);
      const pg0 = await backendCpu();
      const self0 = process.cpuUsage();
      const machine0 = machineBusyMs();
      const t0 = performance.now();
      const mono0 = Number(process.hrtime.bigint() / 1000n);
      log(`${name}: ${DURATION_MS / 1000} s`);
      const result = load.rate ? await openLoop(target, load.rate, DURATION_MS, 512) : await closedLoop(target, load.connections!, DURATION_MS);
      const wall = performance.now() - t0;
      const mono1 = Number(process.hrtime.bigint() / 1000n);
      const gw1 = cpuSplitMs(pid);
      const threads1 = threadCpuMs(pid);
      const sim1 = cpuMs(sim.pid!);
      const self1 = process.cpuUsage(self0);
      const machine1 = machineBusyMs();
      const pg1 = await backendCpu();
      let lag: number | null = null;
      let events1: Awaited<ReturnType<typeof lastEvent>> = null;
      if (resume) await resume();
      if (side === 'gateway') {
        const c0 = performance.now();
        await catchUp();
        lag = (performance.now() - c0) / 1000;
        events1 = await lastEvent();
      }
      const gw2 = cpuMs(pid);
      let pgMs = 0;
      for (const [p, ms] of pg1) pgMs += ms - (pg0.get(p) ?? 0);
      const per = (ms: number) => (result.ok > 0 ? ms / result.ok : NaN);
      const selfMs = (self1.user + self1.system) / 1000;
      const gwMs = gw1.user + gw1.system - gw0.user - gw0.system;
      const m: Measurement = {
        name,
        mode,
        load: load.name,
        base: load.base,
        side,
        result,
        gatewayCpuMsPerReq: per(gwMs),
        gatewayUserMsPerReq: per(gw1.user - gw0.user),
        gatewaySystemMsPerReq: per(gw1.system - gw0.system),
        gatewayThreadsMsPerReq: Object.fromEntries(
          [...threads1].map(([name, ms]) => [name, Math.round(per(ms - (threads0.get(name) ?? 0)) * 1000) / 1000] as const).filter(([, v]) => v > 0),
        ),
        gatewayCpuMsPerReqWithCatchUp: side === 'gateway' ? per(gw2 - gw0.user - gw0.system) : null,
        projectionLagS: lag,
        postgresCpuMsPerReq: per(pgMs),
        simulatorCpuMsPerReq: per(sim1 - sim0),
        loadgenCpuMsPerReq: per(selfMs),
        gatewayCoreBusy: gwMs / wall,
        loadCoreBusy: (sim1 - sim0 + selfMs + pgMs) / wall,
        otherCores: Math.max(0, machine1 - machine0 - gwMs - (sim1 - sim0) - selfMs - pgMs) / wall,
        quietWaitS,
        loadavgBefore,
        gatewayVmHwmMb: memMb(pid, 'VmHWM'),
        gatewayVmRssMb: memMb(pid, 'VmRSS'),
        eventsPerReq: events0 && events1 && result.ok > 0 ? Number(events1.g - events0.g) / result.ok : null,
        monotonicUs: [mono0, mono1],
        ...(options.note ? { note: options.note } : {}),
      };
      measurements.push(m);
      if (side === 'gateway') {
        const key = /Bearer (\S+)/.exec(target.headers(0).authorization ?? '')?.[1];
        if (key) runAccounts.set(name, { key, calls: result.ok });
      }
      const r = result;
      log(
        `${name}: ${r.rps.toFixed(0)} req/s, p50 ${r.latency.p50.toFixed(3)} ms, p99 ${r.latency.p99.toFixed(3)} ms` +
          (mode === 'stream' ? `, TTFB p50 ${r.ttfb.p50.toFixed(3)} ms` : '') +
          `, errors ${r.errors}, gateway CPU ${m.gatewayCpuMsPerReq.toFixed(3)} ms/req, core 0 ${(m.loadCoreBusy * 100).toFixed(0)}%, other processes ${m.otherCores.toFixed(2)} cores` +
          (lag !== null ? `, projections caught up ${lag.toFixed(1)} s after the run` : ''),
      );
      if (r.errors > 0) log(`${name}: error samples: ${r.errorSamples.join(' | ')}`);
      save();
    };

    await waitQuiet();
    const idle0 = cpuMs(primary.pid);
    const idleT0 = performance.now();
    await sleep(3000);
    const gatewayIdleCpu = (cpuMs(primary.pid) - idle0) / (performance.now() - idleT0);
    log(`gateway idle CPU: ${(gatewayIdleCpu * 100).toFixed(1)}% of a core; RSS after start ${gatewayRssAfterStartMb.toFixed(0)} MB`);

    // -------- the suite: direct and gateway back to back for every mode and load
    // (each gateway run on an account of its own, created just before its warm-up: see the analysis
    // in docs/benchmarks.md for why a wallet's history matters; `c1-busy-account` below measures it)
    for (const mode of ['nonstream', 'stream'] as const)
      for (const load of LOADS) {
        await runOne(mode, load, 'direct', targetOf('direct', mode));
        await runOne(mode, load, 'gateway', freshTarget(mode, `bench ${mode} ${load.name}`));
      }

    // -------- diagnostic 1: the same 50 connections spread over 50 accounts (one hot wallet or many)
    const manyWallets: Load = { name: 'c50-50accounts', base: 'c50', connections: 50 };
    if (DIAG && selected(`nonstream/${manyWallets.name}/gateway`)) {
      log('creating 50 accounts for the many-wallets diagnostic');
      const keys: string[] = [];
      for (let i = 0; i < 50; i++) keys.push((await newAccountKey(primary.url, `bench-${i}`)).key);
      await runOne('nonstream', manyWallets, 'gateway', targetOf('gateway', 'nonstream', keys));
    }

    const peakRssMb = memMb(primary.pid, 'VmHWM');
    log(`gateway peak RSS (VmHWM): ${peakRssMb.toFixed(1)} MB`);

    // -------- diagnostics 2 and 3, for non-streaming c1 and c50 and streaming c1, back to back:
    //  - `-again`: the main gateway once more (later runs differ from the first ones: the tables grow);
    //  - `-projections-paused`: the request path alone; the projection runner is held (see
    //    pauseProjections) during the timed run, and catches up afterwards;
    //  - `-async-commit`: commits that do not wait for the WAL flush: the main gateway is stopped and
    //    another one started whose connections use `options=-c synchronous_commit=off` (never two
    //    gateways at once: their projection runners would compete for the same batches), then the
    //    main configuration is started again.
    const diagLoads: Array<[Mode, string, number]> = [
      ['nonstream', 'c1', 1],
      ['nonstream', 'c50', 50],
      ['stream', 'c1', 1],
    ];
    const asyncUrl = new URL(DATABASE_URL);
    asyncUrl.searchParams.set('options', '-c synchronous_commit=off');
    for (const [mode, base, connections] of DIAG ? diagLoads : []) {
      await runOne(mode, { name: `${base}-again`, base, connections }, 'gateway', freshTarget(mode, `bench ${mode} ${base} again`));
      await runOne(mode, { name: `${base}-projections-paused`, base, connections }, 'gateway', freshTarget(mode, `bench ${mode} ${base} paused`), primary, {
        pauseProjections: true,
        note: 'projection runner held during the timed run',
      });
      if (!selected(`${mode}/${base}-async-commit/gateway`)) continue;
      await stop(primary.child);
      const asyncGw = await startGateway('gateway-async-commit', [], { DATABASE_URL: asyncUrl.toString() });
      await runOne(mode, { name: `${base}-async-commit`, base, connections }, 'gateway', freshTarget(mode, `bench ${mode} ${base} async`, asyncGw), asyncGw, {
        note: 'a gateway whose connections use synchronous_commit=off',
      });
      await stop(asyncGw.child);
      primary = await startGateway('gateway', []);
    }

    // -------- diagnostic 4: one connection on the account with the longest history so far
    if (DIAG && selected('nonstream/c1-busy-account/gateway')) {
      const busiest = [...runAccounts.entries()].filter(([name]) => !name.includes('50accounts')).sort((a, b) => b[1].calls - a[1].calls)[0];
      if (busiest) {
        const [from, { key, calls }] = busiest;
        await runOne('nonstream', { name: 'c1-busy-account', base: 'c1', connections: 1 }, 'gateway', targetOf('gateway', 'nonstream', [key]), primary, {
          note: `the account of ${from}, after its ${calls} calls (+ warm-up calls)`,
        });
      }
    }
    await stop(primary.child);

    // -------- diagnostic 5: SQL statements per request, with a query counter preloaded into another gateway
    let queryCounts: Record<string, QueryCount> | null = null;
    if (DIAG && selected('query-count')) {
      const countFile = join(work, 'query-counts.json');
      const counted = await startGateway('gateway-count-queries', ['--import', './bench/chat-overhead/count-queries.mjs'], { COUNT_QUERIES_FILE: countFile });
      const snapshot = async (): Promise<Record<string, number>> => {
        counted.child.kill('SIGUSR2');
        await sleep(300);
        return JSON.parse(readFileSync(countFile, 'utf8')) as Record<string, number>;
      };
      queryCounts = {};
      for (const mode of ['nonstream', 'stream'] as const) {
        const target = targetOf('gateway', mode, [acct.key], counted);
        await closedLoop(target, 1, 1000, false); // key and wallet state cached, connections open
        await catchUp();
        const c0 = await snapshot();
        const r = await closedLoop(target, 1, 3000);
        await catchUp();
        const c1 = await snapshot();
        const perRequest: Record<string, number> = {};
        const byOrigin: Record<string, number> = {};
        for (const [key, n] of Object.entries(c1)) {
          const d = (n - (c0[key] ?? 0)) / r.ok;
          if (d <= 0) continue;
          perRequest[key] = Math.round(d * 1000) / 1000;
          const origin = key.split(' | ')[0]!;
          byOrigin[origin] = Math.round(((byOrigin[origin] ?? 0) + d) * 1000) / 1000;
        }
        queryCounts[mode] = { requests: r.ok, byOrigin, perRequest };
        log(`SQL statements per ${mode} request: ${JSON.stringify(byOrigin)}`);
      }
      await stop(counted.child);
    }

    summary = {
      startedAt,
      machine: machine(),
      settings: { durationS: DURATION_MS / 1000, warmupS: WARMUP_MS / 1000, rate: RATE, cpuProf: CPU_PROF, quietCores: QUIET_CORES, quietWaitS: QUIET_WAIT_MS / 1000, only: ONLY?.source ?? null },
      gatewayIdleCpu,
      gatewayRssAfterStartMb,
      peakRssMb,
      measurements,
      queryCounts,
      sourceNewestMtime,
      sourceChangedDuringRun: changedSince(startedMs),
    };
    if (summary.sourceChangedDuringRun.length > 0) log(`WARNING: gateway sources changed during the run: ${summary.sourceChangedDuringRun.join(', ')}`);
    save();
    const md = report(summary);
    writeFileSync(join(OUT, 'results.md'), md);
    process.stdout.write(`\n${md}\n`);
    log(`results: ${join(OUT, 'results.json')}, ${join(OUT, 'results.md')}`);
  } finally {
    for (const child of gateways) await stop(child);
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

function machine(): Record<string, string | number> {
  const cpu = cpus();
  const pgVersion = (() => {
    try {
      return execFileSync('psql', ['--version']).toString().trim();
    } catch {
      return '?';
    }
  })();
  return {
    cpu: `${cpu.length} × ${cpu[0]?.model ?? '?'}`,
    memMb: Math.round(Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) / 1024),
    kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(),
    node: process.version,
    postgres: pgVersion,
  };
}

// ---------------------------------------------------------------- report

const f = (v: number | null | undefined, d = 2) => (v === null || v === undefined || Number.isNaN(v) ? '–' : v.toFixed(d));

export function report(s: Summary): string {
  const direct = (mode: string, base: string) => s.measurements.find((m) => m.mode === mode && m.load === base && m.side === 'direct');
  const gatewayRuns = (mode: string) => s.measurements.filter((m) => m.mode === mode && m.side === 'gateway');
  const lines: string[] = [];
  const pct = (v: number) => `${f(v * 100, 0)}%`;
  if (s.sourceChangedDuringRun.length > 0)
    lines.push(`> **Warning**: gateway sources changed while the benchmark ran (${s.sourceChangedDuringRun.join(', ')}); runs after the change may mix two versions.`, '');

  lines.push('### Non-streaming', '');
  lines.push('| load | direct req/s | gateway req/s | direct p50 / p99 ms | gateway p50 / p99 ms | added p50 ms | added p99 ms | gateway CPU ms/req (incl. projection catch-up) | gateway core busy | core 0 busy | other processes (cores) | errors (direct / gateway) |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const g of gatewayRuns('nonstream')) {
    const d = direct('nonstream', g.base);
    lines.push(
      `| ${g.load} | ${f(d?.result.rps, 0)} | ${f(g.result.rps, 0)} | ${f(d?.result.latency.p50, 3)} / ${f(d?.result.latency.p99, 3)} | ${f(g.result.latency.p50, 3)} / ${f(g.result.latency.p99, 3)} | ` +
        `${d ? f(g.result.latency.p50 - d.result.latency.p50, 3) : '–'} | ${d ? f(g.result.latency.p99 - d.result.latency.p99, 3) : '–'} | ` +
        `${f(g.gatewayCpuMsPerReq, 3)} (${f(g.gatewayCpuMsPerReqWithCatchUp, 3)}) | ${pct(g.gatewayCoreBusy)} | ${pct(g.loadCoreBusy)} | ${f(g.otherCores, 2)} | ${d?.result.errors ?? '–'} / ${g.result.errors} |`,
    );
  }
  lines.push('', '### Streaming (`stream: true`; TTFB = first body byte, total = `data: [DONE]` read)', '');
  lines.push('| load | direct req/s | gateway req/s | direct TTFB p50 / p99 ms | gateway TTFB p50 / p99 ms | added TTFB p50 / p99 ms | direct total p50 / p99 ms | gateway total p50 / p99 ms | added total p50 / p99 ms | gateway CPU ms/req (incl. projection catch-up) | gateway core busy | core 0 busy | other processes (cores) | errors (direct / gateway) |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const g of gatewayRuns('stream')) {
    const d = direct('stream', g.base);
    const diff = (a: number, b?: number) => (b === undefined ? '–' : f(a - b, 3));
    lines.push(
      `| ${g.load} | ${f(d?.result.rps, 0)} | ${f(g.result.rps, 0)} | ${f(d?.result.ttfb.p50, 3)} / ${f(d?.result.ttfb.p99, 3)} | ${f(g.result.ttfb.p50, 3)} / ${f(g.result.ttfb.p99, 3)} | ` +
        `${diff(g.result.ttfb.p50, d?.result.ttfb.p50)} / ${diff(g.result.ttfb.p99, d?.result.ttfb.p99)} | ` +
        `${f(d?.result.latency.p50, 3)} / ${f(d?.result.latency.p99, 3)} | ${f(g.result.latency.p50, 3)} / ${f(g.result.latency.p99, 3)} | ` +
        `${diff(g.result.latency.p50, d?.result.latency.p50)} / ${diff(g.result.latency.p99, d?.result.latency.p99)} | ` +
        `${f(g.gatewayCpuMsPerReq, 3)} (${f(g.gatewayCpuMsPerReqWithCatchUp, 3)}) | ${pct(g.gatewayCoreBusy)} | ${pct(g.loadCoreBusy)} | ${f(g.otherCores, 2)} | ${d?.result.errors ?? '–'} / ${g.result.errors} |`,
    );
  }

  const nc1 = s.measurements.find((m) => m.name === 'nonstream/c1/gateway');
  const nc1d = direct('nonstream', 'c1');
  const sc1 = s.measurements.find((m) => m.name === 'stream/c1/gateway');
  const sc1d = direct('stream', 'c1');
  const nc50 = s.measurements.find((m) => m.name === 'nonstream/c50/gateway');
  const check = (label: string, target: string, value: number | undefined, ok: (v: number) => boolean, unit: string) =>
    `| ${label} | ${target} | ${value === undefined ? '–' : `${f(value, value > 100 ? 0 : 3)} ${unit}`} | ${value === undefined ? 'not measured' : ok(value) ? '**met**' : '**missed**'} |`;
  lines.push('', '### Targets (issue 3, item 8)', '', '| target | goal | measured | |', '|---|---|--:|---|');
  lines.push(check('added p50, non-streaming, 1 connection', '≤ 0.6 ms', nc1 && nc1d ? nc1.result.latency.p50 - nc1d.result.latency.p50 : undefined, (v) => v <= 0.6, 'ms'));
  lines.push(check('added p99, non-streaming, 1 connection', '≤ 2 ms', nc1 && nc1d ? nc1.result.latency.p99 - nc1d.result.latency.p99 : undefined, (v) => v <= 2, 'ms'));
  lines.push(check('added p50, streaming (TTFB), 1 connection', '≤ 1 ms', sc1 && sc1d ? sc1.result.ttfb.p50 - sc1d.result.ttfb.p50 : undefined, (v) => v <= 1, 'ms'));
  lines.push(check('added p50, streaming (whole stream), 1 connection', '≤ 1 ms', sc1 && sc1d ? sc1.result.latency.p50 - sc1d.result.latency.p50 : undefined, (v) => v <= 1, 'ms'));
  lines.push(check('requests/s, non-streaming, 50 connections', '≥ 3,000', nc50?.result.rps, (v) => v >= 3000, 'req/s'));
  lines.push(check('gateway peak RSS (VmHWM)', '≤ 160 MB', s.peakRssMb, (v) => v <= 160, 'MB'));

  lines.push('', '### Every run', '');
  lines.push('| run | req/s | ok | errors | p50 ms | p99 ms | max ms | TTFB p50 ms | gateway CPU ms/req (user + sys) | of which main thread | Postgres CPU ms/req | simulator CPU ms/req | load generator CPU ms/req | events/req | projections caught up after (s) | gateway RSS / peak MB | other processes (cores) |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const m of s.measurements) {
    const mainThread = Object.entries(m.gatewayThreadsMsPerReq).find(([name]) => name.endsWith('(main thread)'))?.[1];
    const r = m.result;
    lines.push(
      `| ${m.name} | ${f(r.rps, 0)} | ${r.ok} | ${r.errors} | ${f(r.latency.p50, 3)} | ${f(r.latency.p99, 3)} | ${f(r.latency.max, 1)} | ${m.mode === 'stream' ? f(r.ttfb.p50, 3) : '–'} | ` +
        `${m.side === 'gateway' ? `${f(m.gatewayCpuMsPerReq, 3)} (${f(m.gatewayUserMsPerReq, 2)} + ${f(m.gatewaySystemMsPerReq, 2)})` : '–'} | ${m.side === 'gateway' ? f(mainThread, 3) : '–'} | ${f(m.postgresCpuMsPerReq, 3)} | ${f(m.simulatorCpuMsPerReq, 3)} | ${f(m.loadgenCpuMsPerReq, 3)} | ` +
        `${f(m.eventsPerReq, 2)} | ${f(m.projectionLagS, 1)} | ${f(m.gatewayVmRssMb, 0)} / ${f(m.gatewayVmHwmMb, 0)} | ${f(m.otherCores, 2)} |`,
    );
  }
  const notes = s.measurements.filter((m) => m.note);
  if (notes.length > 0) lines.push('', ...notes.map((m) => `- \`${m.name}\`: ${m.note}`));
  lines.push(
    '',
    `Gateway RSS right after start: ${f(s.gatewayRssAfterStartMb, 0)} MB; peak RSS (VmHWM, main gateway, whole suite): **${f(s.peakRssMb, 1)} MB**; gateway CPU while idle: ${f(s.gatewayIdleCpu * 100, 1)}% of a core.`,
  );

  if (s.queryCounts) {
    lines.push('', '### SQL statements per request (1 connection, counted in the `pg` driver)', '');
    for (const [mode, q] of Object.entries(s.queryCounts)) {
      lines.push(`**${mode}** (${q.requests} requests): ${Object.entries(q.byOrigin).map(([o, n]) => `${o} ${f(n, 2)}`).join(', ')}`, '');
      lines.push('| per request | origin | statement |', '|--:|---|---|');
      for (const [key, n] of Object.entries(q.perRequest).sort((a, b) => b[1] - a[1])) {
        const [origin, sql] = [key.split(' | ')[0]!, key.split(' | ').slice(1).join(' | ')];
        lines.push(`| ${f(n, 2)} | ${origin} | \`${sql.slice(0, 200).replaceAll('|', '\\|')}${sql.length > 200 ? '…' : ''}\` |`);
      }
      lines.push('');
    }
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------- entry

const killChildren = () => {
  for (const child of children) child.kill('SIGKILL');
};
process.on('SIGINT', () => {
  killChildren();
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
  killChildren();
  process.exitCode = 1;
});
