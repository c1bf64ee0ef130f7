/**
 * Summarises a V8 `.cpuprofile` (from `run.ts --cpu-prof`): self time by package / source area and
 * the heaviest functions, plus inclusive time of a few functions of interest.
 *
 *   node --import tsx bench/chat-overhead/profile-summary.ts /tmp/chat-overhead-…/cpu-prof/CPU.….cpuprofile [--top 40]
 *        [--results /tmp/chat-overhead-…/results.json --run nonstream/c50/gateway] [--callers writev]
 *
 * With --results and --run only the samples taken during that timed run count (start-up, warm-up
 * and module loading are left out): run.ts records each run's CLOCK_MONOTONIC window, the clock
 * of the profile's timestamps.
 */
import { frameWhere, loadProfile, runWindow, type CallFrame } from './cpuprofile';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: profile-summary.ts FILE.cpuprofile [--top N]\n');
  process.exit(2);
}
const topIndex = process.argv.indexOf('--top');
const TOP = topIndex === -1 ? 40 : Number(process.argv[topIndex + 1]);
const { profile, byId, parent } = loadProfile(file);

const resultsIndex = process.argv.indexOf('--results');
const runIndex = process.argv.indexOf('--run');
const window: [number, number] | null = resultsIndex !== -1 && runIndex !== -1 ? runWindow(process.argv[resultsIndex + 1]!, process.argv[runIndex + 1]!) : null;

const selfUs = new Map<number, number>();
let at = profile.startTime;
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0;
  at += delta;
  if (window && (at < window[0] || at > window[1])) return;
  selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
});
const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

function area(frame: CallFrame): string {
  const url = frame.url;
  if (!url) {
    if (frame.functionName === '(garbage collector)') return '(garbage collector)';
    if (frame.functionName === '(idle)') return '(idle)';
    if (frame.functionName === '(program)') return '(program: native, not attributed)';
    return '(native / V8 builtins)';
  }
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return `npm:${nm[1]}`;
  const src = /\/(src\/[^/]+(?:\/[^/]+)?)\//.exec(url);
  if (src) return src[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url.replace(/^file:\/\//, '');
}

const byArea = new Map<string, number>();
const byFunction = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  const a = area(n.callFrame);
  byArea.set(a, (byArea.get(a) ?? 0) + us);
  const name = `${n.callFrame.functionName || '(anonymous)'}  ${frameWhere(n.callFrame)}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
}

const pct = (us: number) => `${((us / totalUs) * 100).toFixed(1).padStart(5)}%`;
const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
const busyUs = totalUs - (byArea.get('(idle)') ?? 0);
process.stdout.on('error', () => process.exit(0)); // e.g. piped into head
process.stdout.write(`profile: ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s${window ? `, window ${((window[1] - window[0]) / 1e6).toFixed(1)} s` : ''}, sampled ${ms(totalUs)}, busy (not idle) ${ms(busyUs)}\n\n`);
process.stdout.write('self time by area (share of busy time):\n');
for (const [a, us] of [...byArea].filter(([a]) => a !== '(idle)').sort((x, y) => y[1] - x[1]).slice(0, 30))
  process.stdout.write(`  ${ms(us)} ${((us / busyUs) * 100).toFixed(1).padStart(5)}%  ${a}\n`);
process.stdout.write(`\ntop ${TOP} functions by self time:\n`);
for (const [name, us] of [...byFunction].filter(([n]) => !n.startsWith('(idle)')).sort((x, y) => y[1] - x[1]).slice(0, TOP))
  process.stdout.write(`  ${ms(us)} ${pct(us)}  ${name}\n`);

// inclusive time of every frame whose function or file matches one of these
const interesting = process.env.PROFILE_FUNCS?.split(',') ?? [
  'relayChat',
  'onRequest',
  'reserve',
  'settle',
  'refresh',
  'tryAppend',
  'readStream',
  'catchUp',
  'step',
  'applyBatch',
  'readAll',
  'inspect',
  'safeParse',
  'relayBody',
  'relayStream',
  'send',
];
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const fn = byId.get(cur)!.callFrame.functionName;
    if (interesting.includes(fn) && !seen.has(fn)) {
      seen.add(fn);
      inclusive.set(fn, (inclusive.get(fn) ?? 0) + us);
    }
  }
}
process.stdout.write('\ninclusive (synchronous) time of functions of interest — async continuations are not attributed to their callers:\n');
for (const [fn, us] of [...inclusive].sort((x, y) => y[1] - x[1])) process.stdout.write(`  ${ms(us)} ${((us / busyUs) * 100).toFixed(1).padStart(5)}%  ${fn}\n`);

// --callers NAME: who calls a function (e.g. writev), by caller chain (4 frames up)
const callersIndex = process.argv.indexOf('--callers');
if (callersIndex !== -1) {
  const target = process.argv[callersIndex + 1];
  const chains = new Map<string, number>();
  let sum = 0;
  for (const [id, us] of selfUs) {
    if (byId.get(id)!.callFrame.functionName !== target) continue;
    const chain: string[] = [];
    for (let cur = parent.get(id); cur !== undefined && chain.length < Number(process.env.CALLER_DEPTH ?? 6); cur = parent.get(cur)) {
      const frame = byId.get(cur)!.callFrame;
      chain.push(`${frame.functionName || '(anonymous)'}@${frameWhere(frame)}`);
    }
    const key = chain.join(' < ');
    chains.set(key, (chains.get(key) ?? 0) + us);
    sum += us;
  }
  process.stdout.write(`\ncallers of ${target} (${ms(sum)}):\n`);
  for (const [chain, us] of [...chains].sort((x, y) => y[1] - x[1]).slice(0, 15)) process.stdout.write(`  ${ms(us)}  ${chain}\n`);
}
