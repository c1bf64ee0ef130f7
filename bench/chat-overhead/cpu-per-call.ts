/**
 * What a target process spends a call: its CPU time (all threads, `/proc/<pid>/stat`) during a timed run
 * plus what it spends once the load has stopped (a gateway's projections catching up with what the run
 * appended: every request caused it), divided by the run's answered requests; and its RSS at the end.
 * Shared by side-by-side.ts and sizing.ts; Linux only (elsewhere the figures are null). Run by hand.
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { cpuMs, memMb } from './proc';

export const HAS_PROC = existsSync('/proc/self/stat');

/** Waits until a 500 ms window passes with under 5 ms of `pid`'s CPU (60 s at most); the CPU ms it took. */
export async function settle(pid: number): Promise<number> {
  const start = cpuMs(pid);
  for (let i = 0; i < 120; i += 1) {
    const before = cpuMs(pid);
    await new Promise((r) => setTimeout(r, 500));
    if (cpuMs(pid) - before < 5) break;
  }
  return cpuMs(pid) - start;
}

export interface Measured<T> {
  readonly result: T;
  /** the target's CPU ms per answered request, settling included; null without a target or /proc */
  readonly cpuPerCallMs: number | null;
  /** of it, the CPU ms spent after the load stopped (all calls together) */
  readonly afterMs: number;
  /** the target's CPU time during the run / the run's wall time: how busy its core was */
  readonly coreShare: number | null;
  /** a projection worker's CPU ms per answered request (PROJECTIONS=external), settled too */
  readonly workerCpuPerCallMs: number | null;
  readonly rssMb: number | null;
}

/** Runs `run` (a timed run, after its warm-up) and measures `pid` (and `workerPid`) around it. */
export async function measured<T extends { readonly ok: number }>(run: () => Promise<T>, pid: number | null, workerPid?: number): Promise<Measured<T>> {
  const on = pid !== null && HAS_PROC;
  const worker = workerPid !== undefined && HAS_PROC;
  const before = on ? cpuMs(pid) : 0;
  const workerBefore = worker ? cpuMs(workerPid) : 0;
  const started = performance.now();
  const result = await run();
  const wallMs = performance.now() - started;
  const during = on ? cpuMs(pid) - before : 0;
  const afterMs = on ? await settle(pid) : 0;
  if (worker) await settle(workerPid);
  const calls = Math.max(1, result.ok);
  return {
    result,
    cpuPerCallMs: on ? (during + afterMs) / calls : null,
    afterMs,
    coreShare: on ? during / wallMs : null,
    workerCpuPerCallMs: worker ? (cpuMs(workerPid) - workerBefore) / calls : null,
    rssMb: on ? memMb(pid, 'VmRSS') : null,
  };
}
