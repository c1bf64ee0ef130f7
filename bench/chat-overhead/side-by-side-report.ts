/**
 * side-by-side.ts's Markdown report: one table per closed-loop load generator, one for the open-loop pacer.
 * "Added" is a target's percentile minus the same percentile of `direct` (the upstream called by the same
 * generator at the same load just before): a difference of percentiles. Run by hand, never by CI.
 */
import type { Stats } from './loadgen';

export interface Sample {
  readonly ok: number;
  readonly errors: number;
  /** open loop: requests abandoned at the time-out (counted in errors too) */
  readonly timeouts: number;
  readonly rps: number;
  readonly latency: Stats;
}

export interface Row {
  /** autocannon, undici (closed loop) or pacer (open loop) */
  readonly loadgen: string;
  readonly scenario: string;
  readonly target: string;
  readonly round: number;
  readonly sample: Sample;
  /** CPU time of the target process per answered request, ms */
  readonly cpuPerRequestMs: number | null;
  /** gateway-external: the projection worker's CPU time per answered request, ms; an embedded gateway on its
   * own Postgres server: that server's (all its processes) */
  readonly companionCpuPerRequestMs?: number | null;
  readonly rssMb: number | null;
}

const f = (v: number | null, d = 2) => (v !== null && Number.isFinite(v) ? v.toFixed(d) : '–');
const signed = (v: number) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(2)}` : '–');
const cpu = (r: Row) => `${f(r.cpuPerRequestMs, 3)}${r.companionCpuPerRequestMs == null ? '' : ` (+ ${f(r.companionCpuPerRequestMs, 3)})`}`;

export function report(rows: readonly Row[], scenarios: readonly string[], rounds: number): string {
  const out: string[] = [];
  const loadgens = [...new Set(rows.map((r) => r.loadgen))];
  for (const loadgen of loadgens) {
    const pacer = loadgen === 'pacer';
    out.push(
      `\n### ${pacer ? 'pacer (open loop, latency from each request\'s scheduled time)' : loadgen}\n`,
      pacer
        ? '| load | target | served req/s | p50 / p99 / p99.9 ms | added p50 / p99 / p99.9 ms | time-outs | other errors | CPU ms/req (+ projection worker or embedded server) | RSS MB |'
        : '| load | target | req/s | p50 / p99 ms | added p50 / p99 ms | CPU ms/req (+ projection worker or embedded server) | RSS MB | errors |',
      pacer ? '|---|---|--:|--:|--:|--:|--:|--:|--:|' : '|---|---|--:|--:|--:|--:|--:|--:|',
    );
    for (const scenario of scenarios) {
      for (const round of [...new Set(rows.map((r) => r.round))]) {
        const mine = rows.filter((x) => x.loadgen === loadgen && x.scenario === scenario && x.round === round);
        const base = mine.find((r) => r.target === 'direct');
        for (const r of mine) {
          const l = r.sample.latency;
          const load = `${scenario}${rounds > 1 ? ` #${round}` : ''}`;
          const added = (keys: Array<'p50' | 'p99' | 'p999'>) =>
            r.target === 'direct' || !base ? '–' : keys.map((k) => signed(l[k] - base.sample.latency[k])).join(' / ');
          out.push(
            pacer
              ? `| ${load} | ${r.target} | ${f(r.sample.rps, 0)} | ${f(l.p50)} / ${f(l.p99)} / ${f(l.p999)} | ${added(['p50', 'p99', 'p999'])} | ${r.sample.timeouts} | ${r.sample.errors - r.sample.timeouts} | ${cpu(r)} | ${f(r.rssMb, 0)} |`
              : `| ${load} | ${r.target} | ${f(r.sample.rps, 0)} | ${f(l.p50)} / ${f(l.p99)} | ${added(['p50', 'p99'])} | ${cpu(r)} | ${f(r.rssMb, 0)} | ${r.sample.errors} |`,
          );
        }
      }
    }
  }
  return `${out.join('\n')}\n`;
}
