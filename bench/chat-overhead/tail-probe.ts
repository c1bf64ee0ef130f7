/**
 * Where an open loop's tail comes from: runs the pacer (or a closed loop) against one gateway and reads the
 * gateway's own view of the run: event-loop delay, GC pauses by kind and event-store append latency from its
 * /metrics (before and after), the main thread's wait for its core (/proc/…/schedstat), and with --spans every
 * call's spans through a local OTLP receiver; so a tail caused by a blocked loop can be told from one spent
 * waiting on the database. Run by hand (bench/chat-overhead/README.md), never by CI:
 *
 *   DATABASE_URL=… REDIS_URL=… node --import tsx bench/chat-overhead/tail-probe.ts [--rate 500] [--duration 20]
 *        [--connections N] [--pin] [--spans] [--mode postgres|embedded] [--gateway-flags=…] [--env K=V,…]
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { gunzipSync } from 'node:zlib';
import { BENCH_MODEL, benchConfig, Children, pinToCore, startUpstream, stop } from './children';
import { accountWithKey, freshDatabase, pinBackends, startGateway, type StorageMode } from './gateway-target';
import { closedLoop, openLoop, type Target } from './loadgen';
import { cpuMs, processTree } from './proc';

const { values: o } = parseArgs({ options: {
  rate: { type: 'string', default: '500' }, duration: { type: 'string', default: '20' }, warmup: { type: 'string', default: '3' }, mode: { type: 'string', default: 'postgres' },
  'gateway-flags': { type: 'string', default: '' }, env: { type: 'string', default: '' }, upstream: { type: 'string', default: 'fixed' }, connections: { type: 'string', default: '' }, pin: { type: 'boolean', default: false }, spans: { type: 'boolean', default: false }, 'slow-ms': { type: 'string', default: '' },
} });
const ROOT = resolve(import.meta.dirname, '../..');
const ADMIN = 'probe-admin-token-0123456789';

type Sample = Map<string, number>;
async function scrape(origin: string): Promise<Sample> {
  const text = await (await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
  const m: Sample = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    m.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return m;
}
function histogram(a: Sample, b: Sample, prefix: string): string {
  const rows: string[] = [];
  // Over every label set of the metric.
  const total = (m: Sample, suffix: string) => [...m].filter(([k]) => k.startsWith(`${prefix}${suffix}`)).reduce((t, [, v]) => t + v, 0);
  const count = total(b, '_count') - total(a, '_count');
  const sum = total(b, '_sum') - total(a, '_sum');
  for (const [k, v] of b) if (k.startsWith(`${prefix}_bucket`)) rows.push(`${k.slice(prefix.length + 7)} ${v - (a.get(k) ?? 0)}`);
  return `${prefix}: count ${count}, mean ${(1000 * sum / Math.max(1, count)).toFixed(2)} ms\n  ${rows.join('\n  ')}`;
}

interface Span { traceId: string; spanId: string; parentSpanId?: string; name: string; startTimeUnixNano: string; endTimeUnixNano: string }
/** --spans: a local OTLP/HTTP JSON receiver; the gateway's spans (authenticate, reserve, upstream, settle) kept. */
async function spanReceiver(): Promise<{ url: string; spans: Span[]; close: () => void }> {
  const spans: Span[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const body = JSON.parse(raw.toString()) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Span[] }> }> };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, spans, close: () => server.close() };
}

/** For the slowest requests (by their root span), the mean time in each child span and outside all of them. */
function tailBreakdown(spans: Span[], since: bigint) {
  const ms = (s: Span) => Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6;
  const byTrace = new Map<string, Span[]>();
  for (const s of spans) byTrace.set(s.traceId, [...(byTrace.get(s.traceId) ?? []), s]);
  const roots = spans.filter((s) => !s.parentSpanId && BigInt(s.startTimeUnixNano) >= since).sort((a, b) => ms(a) - ms(b));
  const show = (label: string, picked: Span[]) => {
    const sums = new Map<string, number>();
    let outside = 0;
    for (const root of picked) {
      let inside = 0;
      for (const c of byTrace.get(root.traceId)!) if (c !== root) { sums.set(c.name, (sums.get(c.name) ?? 0) + ms(c)); inside += ms(c); }
      outside += ms(root) - inside;
    }
    const n = Math.max(1, picked.length);
    console.log(`${label} (${picked.length} requests, root span mean ${(picked.reduce((t, s) => t + ms(s), 0) / n).toFixed(2)} ms): ${[...sums].map(([k, v]) => `${k} ${(v / n).toFixed(2)}`).join(', ')}, outside the children ${(outside / n).toFixed(2)} ms`);
  };
  const q = (f: number) => roots.slice(Math.floor(roots.length * f));
  show('all', roots);
  show('slowest 10 %', q(0.9));
  show('slowest 1 %', q(0.99));
  // A few of the slowest, each child as start offset +duration (ms from the root's start).
  for (const root of roots.slice(-6)) {
    const t0 = BigInt(root.startTimeUnixNano);
    const off = (s: Span) => (Number(BigInt(s.startTimeUnixNano) - t0) / 1e6).toFixed(1);
    console.log(`  ${ms(root).toFixed(1)} ms: ${byTrace.get(root.traceId)!.filter((c) => c !== root).sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano))).map((c) => `${c.name.replace('gateway.', '')} @${off(c)} +${ms(c).toFixed(1)}`).join(', ')}`);
  }
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'tail-probe-'));
  const children = new Children(ROOT, work);
  const db = o.mode === 'postgres' ? await freshDatabase(process.env.DATABASE_URL!, 'tail_probe') : null;
  // The server's side of the run: its WAL counters, and with --slow-ms its log of slower statements (superuser).
  const server = db ? new pg.Client({ connectionString: process.env.DATABASE_URL }) : null;
  await server?.connect();
  if (server && o['slow-ms']) await server.query(`ALTER DATABASE ${db!.name} SET log_min_duration_statement = ${Number(o['slow-ms'])}`);
  const walStats = async () => (await server?.query<Record<string, string>>('SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full, wal_write, wal_sync FROM pg_stat_wal'))?.rows[0];
  try {
    const upstream = await startUpstream(children, o.upstream as 'fixed', o.pin ? '0' : null);
    const configPath = join(work, 'config.json');
    writeFileSync(configPath, JSON.stringify(benchConfig(upstream.url)));
    const extraEnv: Record<string, string> = Object.fromEntries(o.env.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
    const receiver = o.spans ? await spanReceiver() : null;
    if (receiver) Object.assign(extraEnv, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '500', OTEL_BSP_MAX_QUEUE_SIZE: '20000', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2000' });
    // --pin: as side-by-side.ts, the gateway alone on core 1, this process, the upstream and the run's Postgres backends on core 0.
    if (o.pin) pinToCore(process.pid, '0');
    const gw = await startGateway({ root: ROOT, children, name: 'gateway', core: o.pin ? '1' : null, mode: o.mode as StorageMode, workDir: work, configPath,
      adminToken: ADMIN, databaseUrl: db?.url, redisUrl: process.env.REDIS_URL, logLevel: 'info', nodeFlags: o['gateway-flags'].split(' ').filter(Boolean), env: extraEnv });
    // PROJECTIONS=external: a `gateway projections run` worker beside it, as side-by-side.ts's gateway-external.
    if (extraEnv.PROJECTIONS === 'external') await children.start('projections', null, [...gw.node, 'projections', 'run'], gw.env, /applying the log/);
    // --pin, embedded mode: the gateway's own server inherited core 1; it goes to core 0 as side-by-side.ts does.
    if (o.pin && gw.databasePid) for (const { pid } of processTree(gw.databasePid)) pinToCore(pid, '0');
    const key = await accountWithKey(gw.origin, ADMIN, 'probe');
    if (o.pin && db) await pinBackends(db.url, db.name, '0');
    const target: Target = { origin: gw.origin, path: '/v1/chat/completions', stream: false,
      headers: () => ({ 'content-type': 'application/json', authorization: `Bearer ${key}` }),
      body: JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }], max_tokens: 16 }) };
    // --connections N: a closed loop of N connections instead of the open loop.
    const load = (ms: number, record: boolean) => (o.connections ? closedLoop(target, Number(o.connections), ms, record) : openLoop(target, Number(o.rate), ms, 512, record));
    // The untimed warm-up: V8 goes on optimising the gateway's code for thousands of calls (docs/benchmarks.md,
    // 18:41 UTC), so a short one measures a gateway still tiering up.
    await load(Number(o.warmup) * 1000, false);
    const a = await scrape(gw.origin);
    // The main thread's time on a core and waiting for one (/proc/…/schedstat, ns): a loop that waits for
    // the core is a stall no profile of the process shows as its own work.
    const sched = () => readFileSync(`/proc/${gw.child.pid}/task/${gw.child.pid}/schedstat`, 'utf8').split(' ').map(Number);
    const sched0 = sched();
    const wal0 = await walStats();
    const cpu0 = cpuMs(gw.child.pid!);
    const t0 = process.hrtime.bigint() / 1000n;
    const wallStart = BigInt(Date.now()) * 1_000_000n;
    const r = await load(Number(o.duration) * 1000, true);
    const t1 = process.hrtime.bigint() / 1000n;
    const cpu1 = cpuMs(gw.child.pid!);
    const sched1 = sched();
    const wal1 = await walStats();
    if (wal0 && wal1) console.log(`server WAL during the run: ${Object.keys(wal1).map((k) => `${k} +${Number(wal1[k]) - Number(wal0[k])}`).join(', ')}${o['slow-ms'] ? `; statements over ${o['slow-ms']} ms are in the server's log (database ${db!.name})` : ''}`);
    console.log(`main thread: on a core ${((sched1[0]! - sched0[0]!) / 1e6).toFixed(0)} ms, waiting for one ${((sched1[1]! - sched0[1]!) / 1e6).toFixed(0)} ms, ${sched1[2]! - sched0[2]!} slices`);
    // long-tasks.ts / profile-summary.ts read the run's CLOCK_MONOTONIC window (a cpuprofile's clock) from here.
    writeFileSync(join(work, 'results.json'), JSON.stringify({ measurements: [{ name: 'run', monotonicUs: [Number(t0), Number(t1)] }] }));
    console.log(`results in ${join(work, 'results.json')}`);
    const b = await scrape(gw.origin);
    const l = r.latency;
    console.log(`served ${r.rps.toFixed(0)} req/s, p50 ${l.p50.toFixed(2)} p90 ${l.p90.toFixed(2)} p99 ${l.p99.toFixed(2)} p99.9 ${l.p999.toFixed(2)} max ${l.max.toFixed(1)} ms; CPU ${((cpu1 - cpu0) / r.ok).toFixed(3)} ms/call (during the run)`);
    for (const k of ['nodejs_eventloop_lag_p50_seconds', 'nodejs_eventloop_lag_p90_seconds', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_eventloop_lag_max_seconds'])
      console.log(`${k} ${(1000 * (b.get(k) ?? NaN)).toFixed(2)} ms (since the last scrape)`);
    for (const [k, v] of b) if (k.startsWith('nodejs_gc_duration_seconds_sum') || k.startsWith('nodejs_gc_duration_seconds_count')) console.log(`${k} +${(v - (a.get(k) ?? 0)).toFixed(4)} (${((k.includes('_sum') ? 1000 : 1) * (v - (a.get(k) ?? 0)) / r.ok).toFixed(4)} a call)`);
    console.log(histogram(a, b, 'gateway_event_store_append_seconds'));
    if (receiver) {
      await new Promise((r) => setTimeout(r, 1500));
      tailBreakdown(receiver.spans, wallStart);
      receiver.close();
    }
    if (process.env.COUNT_QUERIES_FILE) {
      gw.child.kill('SIGUSR2');
      await new Promise((r) => setTimeout(r, 500));
      console.log(`${r.ok} calls; statements in ${process.env.COUNT_QUERIES_FILE}`);
    }
    await stop(gw.child);
  } finally {
    for (const child of children.running) await stop(child);
    await server?.end();
    await db?.drop();
  }
}
await main();
