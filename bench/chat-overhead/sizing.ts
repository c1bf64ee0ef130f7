/**
 * `npm run bench`: a load test an operator runs on their own machine to size a deployment (issue 35, item 5).
 * Starts the gateway as `npm start` runs it, in the storage mode chosen, against the bundled upstream
 * simulator, makes an account, a key and one chat-completions channel, then measures closed loops (1 and 50
 * connections) and an open loop (a steady rate), each against the simulator called directly first, and
 * prints req/s, added latency and the gateway process's CPU a call. Needs only `npm ci` (the load generator
 * is loadgen.ts on undici). Run by hand, never by CI:
 *
 *   npm run bench -- [--mode embedded|postgres] [--duration 10] [--warmup 2] [--settle-in 20] [--connections 1,50] [--rate 500]
 *                    [--stream] [--timeout 10] [--upstream simulator|fixed] [--log-level info] [--pin]
 *                    [--database-url URL] [--redis-url URL] [--json FILE] [--out DIR]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_MODEL, benchConfig, Children, npmStartFlags, pinToCore, startUpstream, stop, type UpstreamKind } from './children';
import { HAS_PROC, measured } from './cpu-per-call';
import { accountWithKey, backendPids, freshDatabase, pinBackends, startGateway, type StorageMode } from './gateway-target';
import { closedLoop, openLoop, type RunResult, type Target } from './loadgen';
import { cpuMs, processTree } from './proc';

const { values: o } = parseArgs({
  options: {
    mode: { type: 'string', default: 'embedded' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    'settle-in': { type: 'string', default: '20' },
    connections: { type: 'string', default: '1,50' },
    rate: { type: 'string', default: '500' },
    stream: { type: 'boolean', default: false },
    timeout: { type: 'string', default: '10' },
    upstream: { type: 'string', default: 'simulator' },
    'log-level': { type: 'string', default: 'info' },
    pin: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    'redis-url': { type: 'string' },
    json: { type: 'string' },
    out: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (o.help) {
  process.stdout.write(`${readmeHint()}\n`);
  process.exit(0);
}
const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const MODE = o.mode as StorageMode;
const DURATION_MS = Number(o.duration) * 1000;
const WARMUP_MS = Number(o.warmup) * 1000;
const SETTLE_IN_MS = Number(o['settle-in']) * 1000;
const CONNECTIONS = o.connections.split(',').filter(Boolean).map(Number);
const RATE = Number(o.rate);
const TIMEOUT_MS = Number(o.timeout) * 1000;
const DATABASE_URL = o['database-url'] ?? process.env.DATABASE_URL;
const REDIS_URL = o['redis-url'] ?? process.env.REDIS_URL;
const ADMIN_TOKEN = `adm_bench_${Math.random().toString(36).slice(2)}`;
// --pin: the gateway alone on core 1, the simulator and the load generator (this process) on core 0.
const GATEWAY_CORE = o.pin ? '1' : null;
const LOAD_CORE = o.pin ? '0' : null;

function readmeHint(): string {
  return [
    'npm run bench -- [options]   (README.md, "Sizing a deployment"; bench/chat-overhead/README.md)',
    '  --mode embedded|postgres   embedded (default): no DATABASE_URL, a temporary DATA_DIR; postgres: a fresh',
    '                             database on --database-url (or DATABASE_URL), dropped at the end, and --redis-url (or REDIS_URL)',
    '  --duration S / --warmup S  each timed run (10) and its untimed warm-up at the same load (2)',
    '  --settle-in S              untimed calls (8 connections) right after the start, before any load (20): V8',
    '                             optimises the gateway for thousands of calls, a running gateway is past that',
    '  --connections 1,50         closed loops to run; --rate 500: the open loop in requests/s (0: none)',
    '  --stream                   streaming calls too; --timeout 10: open-loop time-out in s',
    '  --upstream simulator|fixed the bundled simulator (default) or a fixed node:http answer',
    '  --log-level info           the gateway\'s LOG_LEVEL (npm start\'s default is info)',
    '  --pin                      Linux: the gateway on core 1, everything else on core 0 (taskset)',
    '  --json FILE                write the results as JSON; --out DIR: keep logs and data there',
  ].join('\n');
}

const log = (...parts: unknown[]) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);

interface Load {
  readonly name: string;
  readonly stream: boolean;
  readonly connections?: number;
  readonly rate?: number;
}
const LOADS: Load[] = [false, ...(o.stream ? [true] : [])].flatMap((stream) => [
  ...CONNECTIONS.map((c) => ({ name: `${stream ? 'stream' : 'non-streaming'}, ${c} connection${c === 1 ? '' : 's'}`, stream, connections: c })),
  ...(RATE > 0 ? [{ name: `${stream ? 'stream' : 'non-streaming'}, ${RATE} req/s open loop`, stream, rate: RATE }] : []),
]);

interface Result {
  readonly load: string;
  readonly direct: RunResult;
  readonly gateway: RunResult;
  readonly cpuPerCallMs: number | null;
  /** the database's CPU ms a call: the embedded server's processes, or in postgres mode, a server on this
   * machine, the backends serving the run's database */
  readonly databaseCpuPerCallMs: number | null;
  readonly coreShare: number | null;
  readonly rssMb: number | null;
}

async function main(): Promise<void> {
  if (MODE !== 'embedded' && MODE !== 'postgres') throw new Error(`--mode is embedded or postgres, not ${MODE}`);
  if (o.pin && cpus().length < 2) throw new Error('--pin needs at least 2 cores');
  const work = o.out ? resolve(o.out) : mkdtempSync(join(tmpdir(), 'gateway-bench-'));
  mkdirSync(work, { recursive: true });
  if (LOAD_CORE) pinToCore(process.pid, LOAD_CORE);
  const children = new Children(ROOT, work);
  let db: Awaited<ReturnType<typeof freshDatabase>> | null = null;
  process.on('SIGINT', () => {
    children.killAll();
    void (db?.drop() ?? Promise.resolve()).finally(() => process.exit(130));
  });
  let ok = false;
  try {
    if (MODE === 'postgres') {
      if (!DATABASE_URL || !REDIS_URL) throw new Error('--mode postgres needs --database-url and --redis-url (or DATABASE_URL and REDIS_URL)');
      db = await freshDatabase(DATABASE_URL, 'gateway_bench');
      log(`database ${db.name} created (dropped at the end)`);
    }
    const upstream = await startUpstream(children, o.upstream as UpstreamKind, LOAD_CORE);
    const configPath = join(work, 'gateway-config.json');
    writeFileSync(configPath, JSON.stringify(benchConfig(upstream.url)));
    const gw = await startGateway({
      root: ROOT, children, name: 'gateway', core: GATEWAY_CORE, mode: MODE, workDir: work, configPath,
      adminToken: ADMIN_TOKEN, databaseUrl: db?.url, redisUrl: REDIS_URL, logLevel: o['log-level'],
    });
    const key = await accountWithKey(gw.origin, ADMIN_TOKEN, 'bench');
    if (db && LOAD_CORE) await pinBackends(db.url, db.name, LOAD_CORE);
    // The embedded default's own server inherited the gateway's core; pinned, it goes beside the simulator.
    if (gw.databasePid && LOAD_CORE) for (const { pid } of processTree(gw.databasePid)) pinToCore(pid, LOAD_CORE);
    log(`gateway ${gw.origin} (${MODE}${gw.databasePid ? ` on its own Postgres server, pid ${gw.databasePid}` : ''}, LOG_LEVEL=${o['log-level']}, pid ${gw.child.pid}); upstream ${o.upstream} ${upstream.url}; logs in ${work}`);

    const target = (origin: string, auth: string, stream: boolean): Target => ({
      origin,
      path: '/v1/chat/completions',
      headers: () => ({ 'content-type': 'application/json', authorization: `Bearer ${auth}` }),
      body: JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }], max_tokens: 16, ...(stream ? { stream: true } : {}) }),
      stream,
    });
    // A gateway that has just started still has V8 optimising its code: measured in its first seconds it costs
    // about a third more CPU a call than after a minute (docs/benchmarks.md, 2026-11-28 18:41 UTC).
    if (SETTLE_IN_MS > 0) {
      log(`settling in: ${SETTLE_IN_MS / 1000} s of untimed calls`);
      await closedLoop(target(gw.origin, key, false), 8, SETTLE_IN_MS, false);
    }
    const results: Result[] = [];
    for (const load of LOADS) {
      const run = (t: Target, ms: number, record = true) =>
        load.rate ? openLoop(t, load.rate, ms, 512, record, TIMEOUT_MS) : closedLoop(t, load.connections!, ms, record);
      const direct = target(upstream.url, 'sim-key', load.stream);
      const viaGateway = target(gw.origin, key, load.stream);
      await run(direct, WARMUP_MS, false);
      const d = await run(direct, DURATION_MS);
      await run(viaGateway, WARMUP_MS, false);
      const backends = db && HAS_PROC ? (await backendPids(db.url, db.name)).filter(localPostgres) : [];
      const backendsBefore = backends.map(cpuMs);
      const m = await measured(() => run(viaGateway, DURATION_MS), gw.child.pid!, gw.databasePid);
      const backendsMs = backends.reduce((sum, pid, i) => sum + Math.max(0, cpuMs(pid) - backendsBefore[i]!), 0);
      const databaseCpuPerCallMs = m.companionCpuPerCallMs ?? (backends.length ? backendsMs / Math.max(1, m.result.ok) : null);
      results.push({ load: load.name, direct: d, gateway: m.result, cpuPerCallMs: m.cpuPerCallMs, databaseCpuPerCallMs, coreShare: m.coreShare, rssMb: m.rssMb });
      log(`${load.name}: ${m.result.rps.toFixed(0)} req/s, p50 ${m.result.latency.p50.toFixed(2)} ms, ${m.result.errors} errors`);
    }
    await stop(gw.child);
    const storage = MODE === 'postgres' ? 'postgres mode' : `embedded mode (${gw.databasePid ? 'its own Postgres server' : 'PGlite in its process'})`;
    process.stdout.write(table(results, storage));
    if (o.json) writeFileSync(o.json, JSON.stringify({ mode: MODE, logLevel: o['log-level'], upstream: o.upstream, nodeFlags: npmStartFlags(ROOT), durationMs: DURATION_MS, warmupMs: WARMUP_MS, settleInMs: SETTLE_IN_MS, pinned: o.pin, results }, null, 2));
    ok = true;
  } finally {
    for (const child of children.running) await stop(child);
    await db?.drop();
    if (ok && !o.out) rmSync(work, { recursive: true, force: true });
    else if (!ok) log(`logs kept in ${work}`);
  }
}

/** A pid the server reported that is a Postgres process on this machine (not a container's own numbering). */
function localPostgres(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').startsWith('postgres');
  } catch {
    return false;
  }
}

function table(results: readonly Result[], storage: string): string {
  const f = (v: number | null, d = 2) => (v !== null && Number.isFinite(v) ? v.toFixed(d) : '–');
  const added = (g: number, d: number) => (Number.isFinite(g - d) ? `${g - d >= 0 ? '+' : ''}${(g - d).toFixed(2)}` : '–');
  const header = ['load', 'gateway req/s', 'upstream alone req/s', 'added p50 / p99 / p99.9 ms', 'gateway CPU ms/call', 'calls/s per core', 'database CPU ms/call', 'gateway core busy', 'time-outs', 'errors', 'RSS MB'];
  const rows = results.map((r) => {
    const g = r.gateway.latency;
    const d = r.direct.latency;
    return [
      r.load,
      f(r.gateway.rps, 0),
      f(r.direct.rps, 0),
      `${added(g.p50, d.p50)} / ${added(g.p99, d.p99)} / ${added(g.p999, d.p999)}`,
      f(r.cpuPerCallMs, 3),
      r.cpuPerCallMs ? f(1000 / r.cpuPerCallMs, 0) : '–',
      f(r.databaseCpuPerCallMs, 3),
      r.coreShare === null ? '–' : `${(r.coreShare * 100).toFixed(0)} %`,
      String(r.gateway.timeouts),
      String(r.gateway.errors - r.gateway.timeouts),
      f(r.rssMb, 0),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const notes = [
    '',
    `Gateway: ${storage}, as npm start runs it (node ${npmStartFlags(ROOT).join(' ')}, LOG_LEVEL=${o['log-level']})${o.pin ? ', alone on core 1' : ', not pinned'}; upstream: ${o.upstream === 'fixed' ? 'a fixed node:http answer' : 'the bundled simulator'}; measured after ${SETTLE_IN_MS / 1000} s of untimed calls (--settle-in).`,
    `${DURATION_MS / 1000} s a run after ${WARMUP_MS / 1000} s of warm-up. "Added" is the gateway's percentile minus the upstream's, called directly at the same load just before;`,
    'the open loop sends on schedule whatever the answers and counts latency from each scheduled send.',
    `CPU a call is the gateway process's (all threads, including what its projections do after the load stops)${HAS_PROC ? '' : ': needs Linux /proc, not available here'};`,
    '"calls/s per core" is 1000 / that: about what one core of this machine sustains, before headroom.',
    'Database CPU a call: the embedded Postgres server\'s processes; in postgres mode the backends serving the run\'s database when the run',
    'started, if the server runs on this machine; – on PGlite (inside the gateway\'s own figure) or a remote server.',
    '',
  ];
  return [...notes, line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), ''].join('\n');
}

main().then(
  () => process.exit(0),
  (error) => {
    log(error instanceof Error ? error.stack : error);
    process.exit(1);
  },
);
