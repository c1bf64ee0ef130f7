/**
 * The gateway beside a peer and a bare passthrough, in one run, under two load generators
 * (issue 16 item 4). Run by hand, never by CI:
 *
 *   npm ci --prefix bench/peers          # Portkey's gateway and autocannon, once
 *   node --import tsx bench/chat-overhead/side-by-side.ts [--duration 10] [--warmup 3] [--rounds 1]
 *        [--loadgens autocannon,undici] [--targets passthrough,portkey,gateway[,gateway-external,gateway-embedded,gateway-embedded-async]]
 *        [--scenarios REGEX]
 *        [--log-level LEVEL] [--gateway-flags "--cpu-prof ..."]
 *
 * Layout (as the issue measured it): each target alone on core 1; the load generator, the upstream
 * simulator, Postgres (this run's backends) and Redis on core 0. The targets run one after the other,
 * every other one stopped, so that nothing else shares core 1. The gateway runs as `npm start` runs
 * it, on Postgres + Redis, at the default log level, all calls on ONE account with one key (its
 * history grows through the run). Portkey (`@portkey-ai/gateway` 1.15) forwards to the same
 * simulator through `x-portkey-custom-host`; `bench/peers/loopback.mjs` keeps it on 127.0.0.1.
 *
 * The request is the issue's: `{model, messages: [{role: user, content}], max_tokens: 16}`. For each
 * load generator and load, `direct` (the simulator itself) is measured first and every target's
 * latency is reported as added to it. autocannon's own percentiles are whole milliseconds; the
 * figures here come from its per-response times (its `response` event), which are not rounded.
 * Prints a Markdown table; writes results.json in --out.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { BENCH_MODEL, benchConfig, Children, freePort, gatewayEnv, npmStartFlags, stop } from './children';
import { closedLoop, stats, type Stats, type Target } from './loadgen';
import { cpuMs, memMb } from './proc';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
};
const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DURATION_MS = Number(arg('duration', '10')) * 1000;
const WARMUP_MS = Number(arg('warmup', '3')) * 1000;
const ROUNDS = Number(arg('rounds', '1'));
const LOADGENS = arg('loadgens', 'autocannon,undici').split(',') as Array<'autocannon' | 'undici'>;
const TARGETS = arg('targets', 'passthrough,portkey,gateway').split(',');
const LOG_LEVEL = arg('log-level', '');
const GATEWAY_FLAGS = arg('gateway-flags', '').split(/\s+/).filter(Boolean);
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const STAMP = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
const OUT = resolve(arg('out', join(tmpdir(), `side-by-side-${STAMP}`)));
const TARGET_CORE = '1';
const LOAD_CORE = '0';
const MODEL = BENCH_MODEL;
const ADMIN_TOKEN = `adm_bench_${Math.random().toString(36).slice(2)}`;
const START_FLAGS = npmStartFlags(ROOT);
const peers = createRequire(join(ROOT, 'bench/peers/package.json'));
const autocannon = peers('autocannon') as (opts: Record<string, unknown>) => AutocannonInstance;
interface AutocannonInstance extends Promise<{ non2xx: number; errors: number; timeouts: number; requests: { total: number } }> {
  on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}

const log = (...parts: unknown[]) => process.stderr.write(`[side-by-side ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);
const pin = (pid: number, core: string) => execFileSync('taskset', ['-a', '-p', '-c', core, String(pid)], { stdio: 'ignore' });

const processes = new Children(ROOT, OUT);
const start = processes.start.bind(processes);
const children = processes.running;

// ------------------------------------------------------------------ load

interface Scenario {
  readonly name: string;
  readonly stream: boolean;
  readonly connections: number;
}
const ALL_SCENARIOS: Scenario[] = [
  { name: 'nonstream/c1', stream: false, connections: 1 },
  { name: 'stream/c1', stream: true, connections: 1 },
  { name: 'nonstream/c50', stream: false, connections: 50 },
  { name: 'stream/c50', stream: true, connections: 50 },
];
const ONLY = new RegExp(arg('scenarios', '.'));
const SCENARIOS = ALL_SCENARIOS.filter((s) => ONLY.test(s.name));
const body = (stream: boolean) =>
  JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }], max_tokens: 16, ...(stream ? { stream: true } : {}) });

interface Endpoint {
  readonly origin: string;
  readonly headers: Record<string, string>;
}
interface Sample {
  readonly ok: number;
  readonly errors: number;
  readonly rps: number;
  readonly latency: Stats;
}

async function withAutocannon(ep: Endpoint, s: Scenario, durationMs: number): Promise<Sample> {
  const times: number[] = [];
  const started = performance.now();
  const instance = autocannon({
    url: `${ep.origin}/v1/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...ep.headers },
    body: body(s.stream),
    connections: s.connections,
    pipelining: 1,
    duration: durationMs / 1000,
  });
  instance.on('response', (_c, status, _b, ms) => {
    if (status === 200) times.push(ms);
  });
  const r = await instance;
  const seconds = (performance.now() - started) / 1000;
  return { ok: times.length, errors: r.non2xx + r.errors + r.timeouts, rps: times.length / seconds, latency: stats(times) };
}

async function withUndici(ep: Endpoint, s: Scenario, durationMs: number): Promise<Sample> {
  const target: Target = {
    origin: ep.origin,
    path: '/v1/chat/completions',
    headers: () => ({ 'content-type': 'application/json', ...ep.headers }),
    body: body(s.stream),
    stream: s.stream,
  };
  const r = await closedLoop(target, s.connections, durationMs);
  return { ok: r.ok, errors: r.errors, rps: r.rps, latency: r.latency };
}

// ------------------------------------------------------------------ run

/**
 * CPU the target spends once the load has stopped (the gateway's projections catching up with what
 * the run appended): counted into the run's CPU per request, since every request caused it. Waits
 * until a 500 ms window passes with under 5 ms of CPU.
 */
async function settle(pid: number): Promise<number> {
  const start = cpuMs(pid);
  for (let i = 0; i < 120; i += 1) {
    const before = cpuMs(pid);
    await new Promise((r) => setTimeout(r, 500));
    if (cpuMs(pid) - before < 5) break;
  }
  return cpuMs(pid) - start;
}

interface Row {
  readonly loadgen: string;
  readonly scenario: string;
  readonly target: string;
  readonly round: number;
  readonly sample: Sample;
  /** CPU time of the target process per answered request, ms */
  readonly cpuPerRequestMs: number | null;
  /** gateway-external: the projection worker's CPU time per answered request, ms */
  readonly workerCpuPerRequestMs?: number | null;
  readonly rssMb: number | null;
}

async function main() {
  mkdirSync(OUT, { recursive: true });
  pin(process.pid, LOAD_CORE);
  log(`output ${OUT}`);
  const dbName = `bench_sbs_${STAMP.replace('-', '_')}_${process.pid}`;
  const adminDb = new pg.Client({ connectionString: PG_ADMIN_URL });
  await adminDb.connect();
  await adminDb.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const work = mkdtempSync(join(tmpdir(), 'side-by-side-'));
  const rows: Row[] = [];
  try {
    const simPort = await freePort();
    await start('simulator', LOAD_CORE, [process.execPath, '--import', 'tsx', 'bench/chat-overhead/simulator.ts', '--port', String(simPort)], process.env, /listening on/);
    const simUrl = `http://127.0.0.1:${simPort}`;
    const configPath = join(work, 'gateway-config.json');
    writeFileSync(
      configPath,
      JSON.stringify(benchConfig(simUrl)),
    );

    let gatewayKey = '';
    /** The gateway as `npm start` runs it; `external`: with PROJECTIONS=external and a `gateway projections run`
     * worker on the load core (with Postgres, whose work the worker's is), its CPU counted apart; `embedded`:
     * the zero-setup default (PGlite in a DATA_DIR of its own, no Redis) with LEDGER_CALL_COMMIT as given
     * (`default`: unset, which is `sync` there). */
    const launchGateway = async (external: boolean, embedded: 'default' | 'async' | null = null) => {
      const port = await freePort();
      const env: NodeJS.ProcessEnv = {
        ...gatewayEnv({ port, dataDir: join(work, 'data'), databaseUrl: dbUrl.toString(), redisUrl: REDIS_URL, configPath, adminToken: ADMIN_TOKEN }),
        PROJECTIONS: external ? 'external' : 'in-process',
      };
      if (embedded) {
        // A fresh database each time: its account and key are made below, like the first Postgres gateway's.
        env.DATA_DIR = mkdtempSync(join(work, 'embedded-'));
        for (const name of ['DATABASE_URL', 'REDIS_URL', 'EVENTSTORE_URL', 'LEDGER_CALL_COMMIT']) delete env[name];
        if (embedded === 'async') env.LEDGER_CALL_COMMIT = 'async';
      }
      if (LOG_LEVEL) env.LOG_LEVEL = LOG_LEVEL;
      else delete env.LOG_LEVEL;
      const child = await start('gateway', TARGET_CORE, [process.execPath, ...START_FLAGS, ...GATEWAY_FLAGS, 'bin/gateway.mjs', 'serve'], env, /gateway listening on/);
      const worker = external
        ? await start('projections', LOAD_CORE, [process.execPath, ...START_FLAGS, 'bin/gateway.mjs', 'projections', 'run'], env, /applying the log/)
        : undefined;
      const origin = `http://127.0.0.1:${port}`;
      // Every Postgres gateway uses the same account; an embedded one, one in its own DATA_DIR.
      let key = embedded ? '' : gatewayKey;
      if (!key) {
        const call = async <T>(method: string, path: string, payload?: unknown) => {
          const res = await fetch(`${origin}/admin/v1${path}`, {
            method,
            headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify(payload ?? {}),
          });
          if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
          return (await res.json()) as T;
        };
        const account = await call<{ id: string }>('POST', '/accounts', { name: 'side-by-side' });
        await call('POST', `/accounts/${account.id}/topups`, { amount_usd: '100000', reference: 'bench' });
        key = (await call<{ key: string }>('POST', `/accounts/${account.id}/keys`, { name: 'bench' })).key;
        if (!embedded) gatewayKey = key;
      }
      const endpoint = { origin, headers: { authorization: `Bearer ${key}` } };
      if (embedded) return { child, worker, endpoint };
      // Postgres backends serving this database go to the load core, as the issue's setup had them.
      const db = new pg.Client({ connectionString: dbUrl.toString() });
      await db.connect();
      const pids = (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [dbName])).rows.map((r) => r.pid);
      await db.end();
      for (const pid of pids) {
        try {
          pin(pid, LOAD_CORE);
        } catch {
          /* gone */
        }
      }
      return { child, worker, endpoint };
    };
    const launch: Record<string, () => Promise<{ child: ChildProcess; worker?: ChildProcess; endpoint: Endpoint }>> = {
      passthrough: async () => {
        const port = await freePort();
        const child = await start('passthrough', TARGET_CORE, [process.execPath, '--import', 'tsx', 'bench/chat-overhead/passthrough.ts', '--port', String(port), '--upstream', simUrl], process.env, /listening on/);
        return { child, endpoint: { origin: `http://127.0.0.1:${port}`, headers: {} } };
      },
      portkey: async () => {
        const port = await freePort();
        const child = await start(
          'portkey',
          TARGET_CORE,
          [process.execPath, '--import', './bench/peers/loopback.mjs', 'bench/peers/node_modules/@portkey-ai/gateway/build/start-server.js', `--port=${port}`, '--headless'],
          { ...process.env, NODE_ENV: 'production' },
          /Ready for connections/,
        );
        return {
          child,
          endpoint: {
            origin: `http://127.0.0.1:${port}`,
            headers: { authorization: 'Bearer sim-key', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${simUrl}/v1` },
          },
        };
      },
      gateway: () => launchGateway(false),
      'gateway-external': () => launchGateway(true),
      'gateway-embedded': () => launchGateway(false, 'default'),
      'gateway-embedded-async': () => launchGateway(false, 'async'),
    };
    const direct: Endpoint = { origin: simUrl, headers: { authorization: 'Bearer sim-key' } };
    const measure = async (loadgen: 'autocannon' | 'undici', s: Scenario, ep: Endpoint, pid: number | null, workerPid?: number) => {
      const run = loadgen === 'autocannon' ? withAutocannon : withUndici;
      await run(ep, s, WARMUP_MS);
      const before = pid === null ? 0 : cpuMs(pid);
      const workerBefore = workerPid === undefined ? 0 : cpuMs(workerPid);
      const sample = await run(ep, s, DURATION_MS);
      const during = pid === null ? 0 : cpuMs(pid) - before;
      const after = pid === null ? 0 : await settle(pid);
      // The worker catches up with what the run appended: settled too, and counted whole.
      if (workerPid !== undefined) await settle(workerPid);
      const worker = workerPid === undefined ? null : (cpuMs(workerPid) - workerBefore) / Math.max(1, sample.ok);
      const cpu = pid === null ? null : (during + after) / Math.max(1, sample.ok);
      return { sample, cpu, worker, afterMs: after, rss: pid === null ? null : memMb(pid, 'VmRSS') };
    };

    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const loadgen of LOADGENS) {
        for (const s of SCENARIOS) {
          const d = await measure(loadgen, s, direct, null);
          rows.push({ loadgen, scenario: s.name, target: 'direct', round, sample: d.sample, cpuPerRequestMs: null, rssMb: null });
          log(loadgen, s.name, 'direct', d.sample.rps.toFixed(0), 'req/s', d.sample.latency.p50.toFixed(3), 'ms p50');
        }
      }
      for (const name of TARGETS) {
        const { child, worker, endpoint } = await launch[name]!();
        try {
          for (const loadgen of LOADGENS) {
            for (const s of SCENARIOS) {
              const m = await measure(loadgen, s, endpoint, child.pid!, worker?.pid);
              rows.push({ loadgen, scenario: s.name, target: name, round, sample: m.sample, cpuPerRequestMs: m.cpu, workerCpuPerRequestMs: m.worker, rssMb: m.rss });
              log(loadgen, s.name, name, m.sample.rps.toFixed(0), 'req/s', m.sample.latency.p50.toFixed(3), 'ms p50', m.cpu?.toFixed(3), 'ms CPU/req', m.worker === null ? '' : `+ worker ${m.worker.toFixed(3)}`, `(${m.afterMs.toFixed(0)} ms after the run)`, m.sample.errors, 'errors');
            }
          }
        } finally {
          await stop(child);
          if (worker) await stop(worker);
        }
      }
    }
  } finally {
    for (const child of children) await stop(child);
    await adminDb.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await adminDb.end();
  }
  writeFileSync(join(OUT, 'results.json'), JSON.stringify(rows, null, 2));
  process.stdout.write(report(rows));
}

function report(rows: Row[]): string {
  const f = (v: number, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '–');
  const signed = (v: number) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(2)}` : '–');
  const out: string[] = [];
  for (const loadgen of LOADGENS) {
    out.push(`\n### ${loadgen}\n`, '| load | target | req/s | p50 / p99 ms | added p50 / p99 ms | CPU ms/req (+ projection worker) | RSS MB | errors |', '|---|---|--:|--:|--:|--:|--:|--:|');
    for (const s of SCENARIOS) {
      for (const round of [...new Set(rows.map((r) => r.round))]) {
        const base = rows.find((r) => r.loadgen === loadgen && r.scenario === s.name && r.round === round && r.target === 'direct');
        for (const r of rows.filter((x) => x.loadgen === loadgen && x.scenario === s.name && x.round === round)) {
          const added = r.target === 'direct' || !base ? '–' : `${signed(r.sample.latency.p50 - base.sample.latency.p50)} / ${signed(r.sample.latency.p99 - base.sample.latency.p99)}`;
          out.push(
            `| ${s.name}${ROUNDS > 1 ? ` #${round}` : ''} | ${r.target} | ${f(r.sample.rps, 0)} | ${f(r.sample.latency.p50)} / ${f(r.sample.latency.p99)} | ${added} | ${r.cpuPerRequestMs === null ? '–' : f(r.cpuPerRequestMs, 3)}${r.workerCpuPerRequestMs == null ? '' : ` (+ ${f(r.workerCpuPerRequestMs, 3)})`} | ${r.rssMb === null ? '–' : f(r.rssMb, 0)} | ${r.sample.errors} |`,
          );
        }
      }
    }
  }
  return `${out.join('\n')}\n`;
}

const killAll = () => processes.killAll();
process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});
main().then(
  () => process.exit(0),
  (error) => {
    log(error instanceof Error ? error.stack : error);
    killAll();
    process.exit(1);
  },
);
