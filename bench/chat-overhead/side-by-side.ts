/**
 * The gateway beside a peer and the floor, in one run, under two closed-loop load generators and an
 * open-loop pacer (issue 16 item 4, issue 35 item 3). Run by hand, never by CI:
 *
 *   npm ci --prefix bench/peers          # Portkey's gateway and autocannon, once
 *   node --import tsx bench/chat-overhead/side-by-side.ts [--duration 10] [--warmup 3] [--rounds 1]
 *        [--loadgens autocannon,undici] [--targets floor,portkey,gateway,gateway-embedded[,passthrough,gateway-external,gateway-embedded-async,gateway-embedded-pglite]]
 *        [--scenarios REGEX] [--order target|scenario] [--rate 500] [--timeout 10] [--upstream simulator|fixed]
 *        [--log-level info] [--gateway-flags "--cpu-prof ..."] [--out DIR]
 *
 * Layout (as issue 35 measured it): each target alone on core 1; the load generator, the upstream, the
 * Postgres backends serving this run's database and an embedded gateway's own server on core 0 (Redis and
 * Postgres' background processes are not pinned). The targets run one after the other, every other
 * one stopped, so that nothing else shares core 1. A gateway runs as `npm start` runs it (gateway-target.ts:
 * npm start's node flags, LOG_LEVEL `info` unless --log-level), every Postgres-mode call on ONE account with
 * one key (its history grows through the run); an embedded one in a fresh DATA_DIR with an account of its
 * own. `floor` (floor.ts) is fastify + undici parsing the JSON both ways, `passthrough` (passthrough.ts) the
 * barer pipe. Portkey (`@portkey-ai/gateway` 1.15) forwards to the same upstream through
 * `x-portkey-custom-host`; `bench/peers/loopback.mjs` keeps it on 127.0.0.1. The upstream is the bundled
 * simulator or (`--upstream fixed`) the fixed node:http mock of issue 35's run (fixed-upstream.ts).
 *
 * The request is the issue's: `{model, messages: [{role: user, content}], max_tokens: 16}`. Closed loops
 * (`c1`, `c50`) run under each --loadgens generator; the open loop (`r<rate>`: a steady rate whatever the
 * answers, latency from each request's scheduled send, time-outs counted) under loadgen.ts's pacer. For
 * each generator and load, `direct` (the upstream itself) is measured first and every target's latency is
 * reported as added to it. autocannon's own percentiles are whole milliseconds; the figures here come from
 * its per-response times (its `response` event), which are not rounded.
 * Prints Markdown tables (side-by-side-report.ts); writes results.json (the setup and every row) in --out.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BENCH_MODEL, benchConfig, Children, freePort, npmStartFlags, pinToCore, startUpstream, stop, type UpstreamKind } from './children';
import { measured } from './cpu-per-call';
import { accountWithKey, freshDatabase, pinBackends, startGateway, type StorageMode } from './gateway-target';
import { closedLoop, openLoop, stats, type Target } from './loadgen';
import { processTree } from './proc';
import { report, type Row, type Sample } from './side-by-side-report';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1]!;
};
const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DURATION_MS = Number(arg('duration', '10')) * 1000;
const WARMUP_MS = Number(arg('warmup', '3')) * 1000;
const ROUNDS = Number(arg('rounds', '1'));
const LOADGENS = arg('loadgens', 'autocannon,undici').split(',') as Array<'autocannon' | 'undici'>;
const TARGETS = arg('targets', 'floor,portkey,gateway,gateway-embedded').split(',');
/** npm start's default; the gateway's access line a call is part of what it costs as shipped */
const LOG_LEVEL = arg('log-level', 'info');
const UPSTREAM = arg('upstream', 'simulator') as UpstreamKind;
const RATE = Number(arg('rate', '500'));
/** open loop: a request unanswered this long after its scheduled send is a time-out */
const TIMEOUT_MS = Number(arg('timeout', '10')) * 1000;
const ORDER = arg('order', 'target');
if (ORDER !== 'target' && ORDER !== 'scenario') throw new Error(`--order is target or scenario, not ${ORDER}`);
const GATEWAY_FLAGS = arg('gateway-flags', '').split(/\s+/).filter(Boolean);
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const STAMP = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
const OUT = resolve(arg('out', join(tmpdir(), `side-by-side-${STAMP}`)));
const TARGET_CORE = '1';
const LOAD_CORE = '0';
const ADMIN_TOKEN = `adm_bench_${Math.random().toString(36).slice(2)}`;
const peers = createRequire(join(ROOT, 'bench/peers/package.json'));
interface AutocannonInstance extends Promise<{ non2xx: number; errors: number; timeouts: number; requests: { total: number } }> {
  on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
/** Loaded from bench/peers only when asked for, so `--loadgens undici` runs without that install. */
const autocannon = LOADGENS.includes('autocannon') ? (peers('autocannon') as (opts: Record<string, unknown>) => AutocannonInstance) : null;

const log = (...parts: unknown[]) => process.stderr.write(`[side-by-side ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);

const processes = new Children(ROOT, OUT);
const start = processes.start.bind(processes);

// ------------------------------------------------------------------ load

interface Scenario {
  readonly name: string;
  readonly stream: boolean;
  /** closed loop */
  readonly connections?: number;
  /** open loop, requests/s */
  readonly rate?: number;
}
const ALL_SCENARIOS: Scenario[] = [
  { name: 'nonstream/c1', stream: false, connections: 1 },
  { name: 'stream/c1', stream: true, connections: 1 },
  { name: 'nonstream/c50', stream: false, connections: 50 },
  { name: 'stream/c50', stream: true, connections: 50 },
  { name: `nonstream/r${RATE}`, stream: false, rate: RATE },
  { name: `stream/r${RATE}`, stream: true, rate: RATE },
];
const ONLY = new RegExp(arg('scenarios', '.'));
const SCENARIOS = ALL_SCENARIOS.filter((s) => ONLY.test(s.name));
/** [generator, scenario]: closed loops under every --loadgens generator, open loops under the pacer */
const RUNS = [
  ...LOADGENS.flatMap((g) => SCENARIOS.filter((s) => s.connections).map((s) => [g, s] as const)),
  ...SCENARIOS.filter((s) => s.rate).map((s) => ['pacer', s] as const),
];
const body = (stream: boolean) =>
  JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }], max_tokens: 16, ...(stream ? { stream: true } : {}) });

interface Endpoint {
  readonly origin: string;
  readonly headers: Record<string, string>;
}

async function withAutocannon(ep: Endpoint, s: Scenario, durationMs: number): Promise<Sample> {
  const times: number[] = [];
  const started = performance.now();
  const instance = autocannon!({
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
  return { ok: times.length, errors: r.non2xx + r.errors + r.timeouts, timeouts: r.timeouts, rps: times.length / seconds, latency: stats(times) };
}

/** loadgen.ts: a closed loop, or the open-loop pacer for a scenario with a rate. */
async function withLoadgen(ep: Endpoint, s: Scenario, durationMs: number): Promise<Sample> {
  const target: Target = {
    origin: ep.origin,
    path: '/v1/chat/completions',
    headers: () => ({ 'content-type': 'application/json', ...ep.headers }),
    body: body(s.stream),
    stream: s.stream,
  };
  const r = s.rate ? await openLoop(target, s.rate, durationMs, 512, true, TIMEOUT_MS) : await closedLoop(target, s.connections!, durationMs);
  return { ok: r.ok, errors: r.errors, timeouts: r.timeouts, rps: r.rps, latency: r.latency };
}

// ------------------------------------------------------------------ run

async function main() {
  mkdirSync(OUT, { recursive: true });
  pinToCore(process.pid, LOAD_CORE);
  log(`output ${OUT}; upstream ${UPSTREAM}; gateways at LOG_LEVEL=${LOG_LEVEL} with node ${[...npmStartFlags(ROOT), ...GATEWAY_FLAGS].join(' ')}`);
  const needsPostgres = TARGETS.some((t) => t === 'gateway' || t === 'gateway-external');
  const db = needsPostgres ? await freshDatabase(PG_ADMIN_URL, 'bench_sbs') : null;
  const work = mkdtempSync(join(tmpdir(), 'side-by-side-'));
  const rows: Row[] = [];
  try {
    const upstream = await startUpstream(processes, UPSTREAM, LOAD_CORE);
    const configPath = join(work, 'gateway-config.json');
    writeFileSync(configPath, JSON.stringify(benchConfig(upstream.url)));

    let gatewayKey = '';
    /** `external`: PROJECTIONS=external and a `gateway projections run` worker on the load core (with Postgres,
     * whose work the worker's is), its CPU counted apart; `embedded`: the zero-setup default with
     * LEDGER_CALL_COMMIT as given (`default`: unset, which is `sync` there). */
    const launchGateway = async (mode: StorageMode, external: boolean, commit?: 'async', database?: 'pglite') => {
      const gw = await startGateway({
        root: ROOT,
        children: processes,
        name: 'gateway',
        core: TARGET_CORE,
        mode,
        workDir: work,
        configPath,
        adminToken: ADMIN_TOKEN,
        databaseUrl: db?.url,
        redisUrl: REDIS_URL,
        logLevel: LOG_LEVEL,
        nodeFlags: GATEWAY_FLAGS,
        env: mode === 'postgres' ? { PROJECTIONS: external ? 'external' : 'in-process' } : { ...(commit ? { LEDGER_CALL_COMMIT: commit } : {}), ...(database ? { EMBEDDED_DATABASE: database } : {}) },
      });
      const worker = external ? await start('projections', LOAD_CORE, [...gw.node, 'projections', 'run'], gw.env, /applying the log/) : undefined;
      // The embedded default's own server inherited the gateway's core: it goes to the load core, as the
      // Postgres mode's backends do (its new backends fork from the postmaster and inherit that), and its CPU
      // is counted beside the gateway's.
      if (gw.databasePid) for (const { pid } of processTree(gw.databasePid)) pinToCore(pid, LOAD_CORE);
      // Every Postgres gateway uses the same account; an embedded one, one in its own DATA_DIR.
      const key = mode === 'postgres' && gatewayKey ? gatewayKey : await accountWithKey(gw.origin, ADMIN_TOKEN, 'side-by-side');
      if (mode === 'postgres') {
        gatewayKey = key;
        // Postgres backends serving this database go to the load core, as the setup had them.
        await pinBackends(db!.url, db!.name, LOAD_CORE);
      }
      return { child: gw.child, worker, companionPid: worker?.pid ?? gw.databasePid, endpoint: { origin: gw.origin, headers: { authorization: `Bearer ${key}` } } };
    };
    const bare = (name: 'floor' | 'passthrough') => async () => {
      const port = await freePort();
      const child = await start(name, TARGET_CORE, [process.execPath, '--import', 'tsx', `bench/chat-overhead/${name}.ts`, '--port', String(port), '--upstream', upstream.url], process.env, /listening on/);
      return { child, endpoint: { origin: `http://127.0.0.1:${port}`, headers: {} } };
    };
    const launch: Record<string, () => Promise<{ child: ChildProcess; worker?: ChildProcess; companionPid?: number | null; endpoint: Endpoint }>> = {
      floor: bare('floor'),
      passthrough: bare('passthrough'),
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
            headers: { authorization: 'Bearer sim-key', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstream.url}/v1` },
          },
        };
      },
      gateway: () => launchGateway('postgres', false),
      'gateway-external': () => launchGateway('postgres', true),
      'gateway-embedded': () => launchGateway('embedded', false),
      'gateway-embedded-async': () => launchGateway('embedded', false, 'async'),
      // The embedded database before issue 35: PGlite on the gateway's own thread.
      'gateway-embedded-pglite': () => launchGateway('embedded', false, undefined, 'pglite'),
    };
    for (const name of TARGETS) if (!launch[name]) throw new Error(`unknown target ${name}; known: ${Object.keys(launch).join(', ')}`);
    const direct: Endpoint = { origin: upstream.url, headers: { authorization: 'Bearer sim-key' } };
    const measure = async (loadgen: string, s: Scenario, ep: Endpoint, pid: number | null, companionPid?: number | null) => {
      const run = loadgen === 'autocannon' ? withAutocannon : withLoadgen;
      await run(ep, s, WARMUP_MS);
      return measured(() => run(ep, s, DURATION_MS), pid, companionPid);
    };

    // --order target: each target started once and every scenario run on it; scenario: for each scenario, the
    // upstream directly and then every target in turn, each started for it and stopped after it.
    const groups = ORDER === 'scenario' ? RUNS.map((run) => [run]) : [RUNS];
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const group of groups) {
        for (const [loadgen, s] of group) {
          const d = await measure(loadgen, s, direct, null);
          rows.push({ loadgen, scenario: s.name, target: 'direct', round, sample: d.result, cpuPerRequestMs: null, rssMb: null });
          log(loadgen, s.name, 'direct', d.result.rps.toFixed(0), 'req/s', d.result.latency.p50.toFixed(3), 'ms p50');
        }
        for (const name of TARGETS) {
          const { child, worker, companionPid, endpoint } = await launch[name]!();
          try {
            for (const [loadgen, s] of group) {
              const m = await measure(loadgen, s, endpoint, child.pid!, companionPid);
              const sample = m.result;
              rows.push({ loadgen, scenario: s.name, target: name, round, sample, cpuPerRequestMs: m.cpuPerCallMs, companionCpuPerRequestMs: m.companionCpuPerCallMs, rssMb: m.rssMb });
              log(loadgen, s.name, name, sample.rps.toFixed(0), 'req/s', sample.latency.p50.toFixed(3), 'ms p50', m.cpuPerCallMs?.toFixed(3), 'ms CPU/req', m.companionCpuPerCallMs === null ? '' : `+ ${m.companionCpuPerCallMs.toFixed(3)} (worker or database)`, `(${m.afterMs.toFixed(0)} ms after the run)`, sample.errors, 'errors', sample.timeouts, 'time-outs');
            }
          } finally {
            await stop(child);
            if (worker) await stop(worker);
          }
        }
      }
    }
  } finally {
    for (const child of processes.running) await stop(child);
    await db?.drop();
    // The config and the embedded gateways' DATA_DIRs (tens of MB each); the logs and results stay in --out.
    rmSync(work, { recursive: true, force: true });
  }
  const setup = { upstream: UPSTREAM, logLevel: LOG_LEVEL, nodeFlags: [...npmStartFlags(ROOT), ...GATEWAY_FLAGS], durationMs: DURATION_MS, warmupMs: WARMUP_MS, order: ORDER, rate: RATE, timeoutMs: TIMEOUT_MS, loadgens: LOADGENS, targets: TARGETS };
  writeFileSync(join(OUT, 'results.json'), JSON.stringify({ setup, rows }, null, 2));
  process.stdout.write(report(rows, SCENARIOS.map((s) => s.name), ROUNDS));
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
