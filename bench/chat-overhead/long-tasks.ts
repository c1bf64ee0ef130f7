/**
 * The main thread's long busy stretches in a V8 `.cpuprofile` (from `run.ts --cpu-prof`, best with
 * `--cpu-prof-interval 100`): a request that arrives while the event loop is busy waits for the
 * stretch to end, so these make the latency tail. Prints how many stretches of each length there
 * were, what the long ones spent their time in (inclusive, summed over all of them), and the
 * longest few one by one.
 *
 *   node --import tsx bench/chat-overhead/long-tasks.ts FILE.cpuprofile --results DIR/results.json
 *        --run nonstream/c1/gateway [--min-ms 1] [--top 25] [--show 8]
 */
import { frameWhere, loadProfile, runWindow, type CallFrame } from './cpuprofile';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: long-tasks.ts FILE.cpuprofile [--results results.json --run NAME] [--min-ms 1] [--top 25] [--show 8] [--with TEXT]\n');
  process.exit(2);
}
const MIN_US = Number(arg('min-ms', '1')) * 1000;
const TOP = Number(arg('top', '25'));
const SHOW = Number(arg('show', '8'));
/** Only stretches with a frame whose label contains this (e.g. `applyBatch`, `garbage`). */
const WITH = arg('with');
/** --runs MS: also the frames present in every sample of a run of at least MS ms (what one synchronous
 * piece of work held the loop with, when consecutive tasks do not share it). */
const RUNS_US = arg('runs') === undefined ? null : Number(arg('runs')) * 1000;
const { profile, byId, parent } = loadProfile(file);
const window: [number, number] = arg('results') && arg('run') ? runWindow(arg('results')!, arg('run')!) : [-Infinity, Infinity];

const IGNORED = new Set(['(root)', '(program)', 'processTicksAndRejections', 'runMicrotasks', 'listOnTimeout', 'processTimers', '(anonymous)']);
const label = (frame: CallFrame) =>
  `${frame.functionName || '(anonymous)'}@${frameWhere(frame)}`;

/** The frames of a sample's stack, leaf first, each once. */
function stack(id: number): string[] {
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const frame = byId.get(cur)!.callFrame;
    if (IGNORED.has(frame.functionName || '(anonymous)') && frame.functionName !== '(garbage collector)') continue;
    seen.add(label(frame));
  }
  return [...seen];
}

interface Stretch {
  start: number;
  us: number;
  frames: Map<string, number>;
}
const stretches: Stretch[] = [];
/** Per frame, the run of consecutive busy samples it is in now; the long ones ended. */
const runs = new Map<string, { start: number; us: number }>();
const longRuns: Array<{ frame: string; start: number; us: number }> = [];
function endRuns(keep: ReadonlySet<string>) {
  for (const [frame, run] of runs) {
    if (keep.has(frame)) continue;
    if (RUNS_US !== null && run.us >= RUNS_US) longRuns.push({ frame, ...run });
    runs.delete(frame);
  }
}
let current: Stretch | null = null;
let at = profile.startTime;
let busyUs = 0;
let windowUs = 0;
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0;
  at += delta;
  if (at < window[0] || at > window[1]) return;
  windowUs += delta;
  const idle = byId.get(id)!.callFrame.functionName === '(idle)';
  if (idle) {
    endRuns(new Set());
    if (current) stretches.push(current);
    current = null;
    return;
  }
  busyUs += delta;
  current ??= { start: at - delta, us: 0, frames: new Map() };
  current.us += delta;
  const frames = stack(id);
  for (const frame of frames) current.frames.set(frame, (current.frames.get(frame) ?? 0) + delta);
  if (RUNS_US !== null) {
    endRuns(new Set(frames));
    for (const frame of frames) {
      const run = runs.get(frame) ?? { start: at - delta, us: 0 };
      run.us += delta;
      runs.set(frame, run);
    }
  }
});
endRuns(new Set());
if (current) stretches.push(current);

const ms = (us: number) => (us / 1000).toFixed(2);
const buckets = [0.5, 1, 1.5, 2, 3, 5, 10, Infinity];
const counts = buckets.map(() => 0);
const bucketUs = buckets.map(() => 0);
for (const s of stretches) {
  const b = buckets.findIndex((limit) => s.us / 1000 < limit);
  counts[b]! += 1;
  bucketUs[b]! += s.us;
}
process.stdout.on('error', () => process.exit(0));
process.stdout.write(`window ${ms(windowUs)} ms, busy ${ms(busyUs)} ms in ${stretches.length} stretches\n\nstretches by length:\n`);
buckets.forEach((limit, i) => {
  const from = i === 0 ? 0 : buckets[i - 1]!;
  process.stdout.write(`  ${String(from).padStart(4)}–${String(limit).padEnd(8)} ms: ${String(counts[i]).padStart(6)}  (${ms(bucketUs[i]!)} ms)\n`);
});

const long = stretches.filter((s) => s.us >= MIN_US && (WITH === undefined || [...s.frames.keys()].some((f) => f.includes(WITH))));
const total = new Map<string, number>();
for (const s of long) for (const [frame, us] of s.frames) total.set(frame, (total.get(frame) ?? 0) + us);
const longUs = long.reduce((sum, s) => sum + s.us, 0);
process.stdout.write(`\n${long.length} stretches ≥ ${MIN_US / 1000} ms${WITH ? ` with ${WITH}` : ''} (${ms(longUs)} ms); inclusive time in them:\n`);
for (const [frame, us] of [...total].sort((a, b) => b[1] - a[1]).slice(0, TOP))
  process.stdout.write(`  ${ms(us).padStart(9)} ms ${((us / longUs) * 100).toFixed(1).padStart(5)}%  ${frame}\n`);

process.stdout.write(`\nthe ${SHOW} longest:\n`);
for (const s of [...long].sort((a, b) => b.us - a.us).slice(0, SHOW)) {
  process.stdout.write(`  ${ms(s.us)} ms at +${ms(s.start - window[0])} ms:\n`);
  for (const [frame, us] of [...s.frames].sort((a, b) => b[1] - a[1]).slice(0, 10)) process.stdout.write(`      ${ms(us).padStart(7)}  ${frame}\n`);
}

if (RUNS_US !== null) {
  // Only the deepest frame of runs that cover the same samples: its callers add nothing.
  const shown = [...longRuns].sort((a, b) => b.us - a.us).slice(0, TOP);
  process.stdout.write(`\nframes in every sample of ${RUNS_US / 1000} ms or more in a row (${longRuns.length}):\n`);
  for (const r of shown) process.stdout.write(`  ${ms(r.us).padStart(8)} ms at +${ms(r.start - window[0])} ms  ${r.frame}\n`);
}
