/**
 * A small undici load generator for the chat-overhead benchmark (run by hand, never by CI).
 *
 * - closedLoop: N connections, each sending its next request as soon as the previous answer has
 *   been read to the end (autocannon's model).
 * - openLoop: a steady request rate, independent of the answers (autocannon's --overallRate);
 *   latency is measured from the moment a request was scheduled, so a gateway that falls behind
 *   shows it in the numbers instead of silently slowing the generator (no coordinated omission);
 *   a request not answered to the end within a time-out of its scheduled time is abandoned and
 *   counted as a time-out, so a gateway that stalls cannot hold the run open.
 *
 * Every answer is read to the end. For streams the time to the first body byte (the first SSE
 * frame) and the total time are recorded, and a stream that does not end with `data: [DONE]`
 * counts as an error.
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

export interface Target {
  /** e.g. http://127.0.0.1:8080 */
  readonly origin: string;
  readonly path: string;
  /** headers of the n-th connection (closed loop) or request (open loop) */
  readonly headers: (n: number) => Record<string, string>;
  readonly body: string;
  readonly stream: boolean;
}

export interface Stats {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

export interface RunResult {
  readonly requests: number;
  readonly ok: number;
  readonly errors: number;
  /** of the errors, requests abandoned at the open loop's time-out */
  readonly timeouts: number;
  readonly statuses: Record<string, number>;
  /** first few error descriptions */
  readonly errorSamples: string[];
  readonly seconds: number;
  readonly rps: number;
  /** whole request, ms (open loop: from the scheduled start) */
  readonly latency: Stats;
  /** time to the first body byte, ms */
  readonly ttfb: Stats;
  /** open loop only: how late the generator dispatched requests, ms */
  readonly dispatchLag?: Stats;
}

export function stats(values: Float64Array | number[]): Stats {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  if (n === 0) return { count: 0, mean: NaN, p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN };
  const at = (q: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
  let sum = 0;
  for (const v of sorted) sum += v;
  return { count: n, mean: sum / n, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: sorted[n - 1]! };
}

class Recorder {
  readonly latency: number[] = [];
  readonly ttfb: number[] = [];
  readonly lag: number[] = [];
  readonly statuses: Record<string, number> = {};
  readonly errorSamples: string[] = [];
  ok = 0;
  errors = 0;
  timeouts = 0;

  fail(what: string) {
    this.errors += 1;
    this.statuses[what] = (this.statuses[what] ?? 0) + 1;
    if (this.errorSamples.length < 5) this.errorSamples.push(what);
  }
}

const DONE = 'data: [DONE]';

/** One request, read to the end; `t0` is when it counts as started; `signal` abandons it (a time-out). */
async function once(pool: Pool, target: Target, headers: Record<string, string>, rec: Recorder, t0: number, record: boolean, signal?: AbortSignal): Promise<void> {
  try {
    const res = await pool.request({ method: 'POST', path: target.path, headers, body: target.body, signal });
    let first = -1;
    let tail = '';
    let size = 0;
    for await (const chunk of res.body) {
      if (first < 0) first = performance.now();
      const b = chunk as Buffer;
      size += b.length;
      if (target.stream || res.statusCode !== 200) tail = (tail + b.toString('latin1')).slice(-256);
    }
    const end = performance.now();
    if (!record) return;
    if (res.statusCode !== 200) return rec.fail(`HTTP ${res.statusCode}: ${tail.slice(0, 200)}`);
    if (target.stream && !tail.includes(DONE)) return rec.fail(`stream without [DONE] (${size} bytes)`);
    if (size === 0) return rec.fail('empty body');
    rec.ok += 1;
    rec.statuses['200'] = (rec.statuses['200'] ?? 0) + 1;
    rec.latency.push(end - t0);
    rec.ttfb.push((first < 0 ? end : first) - t0);
  } catch (error) {
    if (!record) return;
    if (signal?.aborted) {
      rec.timeouts += 1;
      return rec.fail('time-out');
    }
    rec.fail(`${(error as { code?: string }).code ?? ''} ${(error as Error).message}`.trim());
  }
}

function result(rec: Recorder, seconds: number, withLag: boolean): RunResult {
  return {
    requests: rec.ok + rec.errors,
    ok: rec.ok,
    errors: rec.errors,
    timeouts: rec.timeouts,
    statuses: rec.statuses,
    errorSamples: rec.errorSamples,
    seconds,
    rps: rec.ok / seconds,
    latency: stats(rec.latency),
    ttfb: stats(rec.ttfb),
    ...(withLag ? { dispatchLag: stats(rec.lag) } : {}),
  };
}

/** `connections` keep-alive connections, each with one request in flight at a time, for `durationMs`. */
export async function closedLoop(target: Target, connections: number, durationMs: number, record = true): Promise<RunResult> {
  const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const rec = new Recorder();
  const start = performance.now();
  const end = start + durationMs;
  let last = start;
  const worker = async (n: number) => {
    const headers = target.headers(n);
    while (performance.now() < end) {
      await once(pool, target, headers, rec, performance.now(), record);
      last = performance.now();
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, n) => worker(n)));
  await pool.close();
  return result(rec, (last - start) / 1000, false);
}

/**
 * `rate` requests per second for `durationMs`, on up to `maxConnections` connections (a request
 * that finds every connection busy waits in undici's queue, and that wait is part of its latency);
 * a request still unanswered `timeoutMs` after its scheduled time is abandoned as a time-out.
 */
export async function openLoop(target: Target, rate: number, durationMs: number, maxConnections = 256, record = true, timeoutMs = 10_000): Promise<RunResult> {
  const pool = new Pool(target.origin, { connections: maxConnections, pipelining: 1, keepAliveTimeout: 60_000 });
  const rec = new Recorder();
  const total = Math.round((rate * durationMs) / 1000);
  const interval = 1000 / rate;
  const inflight = new Set<Promise<void>>();
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) {
        const scheduled = start + sent * interval;
        if (record) rec.lag.push(performance.now() - scheduled);
        const p = once(pool, target, target.headers(sent), rec, scheduled, record, AbortSignal.timeout(Math.max(1, Math.round(scheduled + timeoutMs - now))));
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        sent += 1;
      }
      if (sent >= total) return resolve();
      // sleep until the next request is due (timers are ~1 ms coarse, so catch up in bursts)
      setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
  await Promise.all(inflight);
  const seconds = (performance.now() - start) / 1000;
  await pool.close();
  return result(rec, seconds, true);
}
