/**
 * The first call after a restart on an account with a long history (issue 16, item 2): starts the
 * gateway (`bin/gateway.mjs serve`, npm start's node flags, LOG_LEVEL=warn, alone on core 1), waits
 * until it is ready (`/readyz`: projections caught up and the warm start ended), makes one chat call
 * with the account's key and a second one, and stops it; `--starts` times. The upstream is the
 * benchmark simulator (`bench/chat-overhead/simulator.ts`, on core 0, with the runner), one model
 * `bench-mini`, so the second call shows what any call costs. The first start of a seeded account has
 * no snapshot yet (seed.ts appends past the command side) and its key was never used (so the warm
 * start does not know it): it reads the whole stream and takes a snapshot; every later start finds the
 * key among the most recently used and loads it and its wallet (snapshot + tail) before it is ready.
 *
 *   DATABASE_URL=postgres://… node --import tsx bench/ledger-scale/cold-start.ts --key sk-… [--starts 3]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_MODEL, benchConfig, npmStartFlags, pinToCore } from '../chat-overhead/children';
import { memMb } from '../chat-overhead/proc';

const { values } = parseArgs({
  options: {
    key: { type: 'string' },
    starts: { type: 'string', default: '3' },
    port: { type: 'string', default: '18080' },
    'sim-port': { type: 'string', default: '18091' },
  },
});
if (!values.key) throw new Error('--key: the seeded account\'s key (seed.ts prints it)');
const base = `http://127.0.0.1:${values.port}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const simUrl = `http://127.0.0.1:${values['sim-port']}`;
const configPath = join(tmpdir(), `cold-start-config-${process.pid}.json`);
writeFileSync(
  configPath,
  JSON.stringify(benchConfig(simUrl)),
);
pinToCore(process.pid, '0');
const simulator = spawn('taskset', ['-c', '0', process.execPath, '--import', 'tsx', 'bench/chat-overhead/simulator.ts', '--port', values['sim-port']!], { stdio: 'ignore' });
process.on('exit', () => simulator.kill('SIGTERM'));

async function start(): Promise<ChildProcess> {
  const child = spawn('taskset', ['-c', '1', process.execPath, ...npmStartFlags(process.cwd()), 'bin/gateway.mjs', 'serve'], {
    env: { ...process.env, PORT: values.port, HOST: '127.0.0.1', LOG_LEVEL: 'warn', GATEWAY_CONFIG: configPath },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode})`);
    const ready = await fetch(`${base}/readyz`).then((r) => r.ok, () => false);
    if (ready) return child;
    await sleep(200);
  }
}

async function call(): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${values.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 }),
  });
  await response.text();
  if (response.status !== 200) throw new Error(`chat call: ${response.status}`);
  return performance.now() - started;
}

console.log('| start | RSS ready (MB) | first call (ms) | RSS after it (MB) | second call (ms) |');
console.log('|--:|--:|--:|--:|--:|');
for (let n = 1; n <= Number(values.starts); n++) {
  const child = await start();
  const ready = memMb(child.pid!, 'VmRSS');
  const first = await call();
  const after = memMb(child.pid!, 'VmRSS');
  const second = await call();
  console.log(`| ${n} | ${ready.toFixed(0)} | ${first.toFixed(1)} | ${after.toFixed(0)} | ${second.toFixed(1)} |`);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}
simulator.kill('SIGTERM');
