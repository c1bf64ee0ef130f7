/**
 * The first call after a restart on an account with a long history (issue 16, item 2): starts the
 * gateway (`bin/gateway.mjs serve`, npm start's node flags, LOG_LEVEL=warn), waits until it is ready
 * (projections caught up), makes one chat call with the account's key and a second one, and stops
 * it; `--starts` times. The first start of a seeded account has no snapshot yet (seed.ts appends
 * past the command side), so it reads the whole stream and takes one; every later start reads the
 * snapshot and the events after it.
 *
 *   DATABASE_URL=postgres://… node --import tsx bench/ledger-scale/cold-start.ts --key sk-… [--starts 3]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { memMb } from '../chat-overhead/proc';

const { values } = parseArgs({
  options: {
    key: { type: 'string' },
    starts: { type: 'string', default: '3' },
    port: { type: 'string', default: '18080' },
    model: { type: 'string', default: 'gpt-4o-mini' },
  },
});
if (!values.key) throw new Error('--key: the seeded account\'s key (seed.ts prints it)');
const base = `http://127.0.0.1:${values.port}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--max-semi-space-size=4', '--heap-growing-percent=50', 'bin/gateway.mjs', 'serve'], {
    env: { ...process.env, PORT: values.port, HOST: '127.0.0.1', LOG_LEVEL: 'warn', SIMULATOR_URL: 'http://127.0.0.1:18090' },
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
    body: JSON.stringify({ model: values.model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 }),
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
