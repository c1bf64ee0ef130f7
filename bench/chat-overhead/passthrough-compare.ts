/**
 * How much a bare fastify + undici passthrough adds on this machine, measured the way `run.ts`
 * measures the gateway: simulator and load generator on core 0, the passthrough alone on core 1,
 * the same request, closed loops of 1 and 50 connections, non-streaming and streaming.
 * Run by hand (never by CI); prints a Markdown table.
 *
 *   node --import tsx bench/chat-overhead/passthrough-compare.ts [--duration 6] [--warmup 2]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { pinToCore } from './children';
import { closedLoop, type Target } from './loadgen';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : process.argv[i + 1]!;
};
const durationMs = Number(arg('--duration', '6')) * 1000;
const warmupMs = Number(arg('--warmup', '2')) * 1000;
const SIM_PORT = 18090;
const PASS_PORT = 18091;

function start(core: string, args: string[], ready: RegExp): Promise<ChildProcess> {
  const child = spawn('taskset', ['-c', core, process.execPath, '--import', 'tsx', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (ready.test(seen)) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
}

const cpuMs = (pid: number) => {
  const fields = execFileSync('cat', [`/proc/${pid}/stat`]).toString().split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};

pinToCore(process.pid, '0');
const sim = await start('0', ['bench/chat-overhead/simulator.ts', '--port', String(SIM_PORT)], /listening on/);
const pass = await start('1', ['bench/chat-overhead/passthrough.ts', '--port', String(PASS_PORT), '--upstream', `http://127.0.0.1:${SIM_PORT}`], /listening on/);
const body = (stream: boolean) => JSON.stringify({ model: 'bench-mini', messages: [{ role: 'user', content: 'Say hello to the benchmark.' }], ...(stream ? { stream: true } : {}) });
const target = (port: number, stream: boolean): Target => ({
  origin: `http://127.0.0.1:${port}`,
  path: '/v1/chat/completions',
  headers: () => ({ 'content-type': 'application/json', authorization: 'Bearer sim-key' }),
  body: body(stream),
  stream,
});

const rows: string[] = ['| run | req/s | p50 / p99 ms | TTFB p50 ms | passthrough CPU ms/req |', '|---|--:|--:|--:|--:|'];
try {
  for (const stream of [false, true]) {
    for (const connections of [1, 50]) {
      for (const [name, port] of [['direct', SIM_PORT], ['passthrough', PASS_PORT]] as const) {
        await closedLoop(target(port, stream), connections, warmupMs, false);
        const before = cpuMs(pass.pid!);
        const r = await closedLoop(target(port, stream), connections, durationMs);
        const cpu = name === 'passthrough' ? ((cpuMs(pass.pid!) - before) / r.ok).toFixed(3) : '–';
        const run = `${stream ? 'stream' : 'nonstream'}/c${connections}/${name}`;
        rows.push(`| ${run} | ${r.rps.toFixed(0)} | ${r.latency.p50.toFixed(3)} / ${r.latency.p99.toFixed(3)} | ${stream ? r.ttfb.p50.toFixed(3) : '–'} | ${cpu} |`);
        process.stderr.write(`${rows.at(-1)}\n`);
      }
    }
  }
} finally {
  sim.kill('SIGTERM');
  pass.kill('SIGTERM');
}
process.stdout.write(`${rows.join('\n')}\n`);
process.exit(0);
