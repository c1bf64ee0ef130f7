/**
 * What a target process spends a call: its CPU time (all threads, `/proc/<pid>/stat`) during a timed run
 * plus what it spends once the load has stopped (a gateway's projections catching up with what the run
 * appended: every request caused it), divided by the run's answered requests; and its RSS at the end.
 * Shared by side-by-side.ts and sizing.ts; Linux only (elsewhere the figures are null). Run by hand.
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { cpuMs, memMb, treeCpuMs } from './proc';

export const HAS_PROC = existsSync('/proc/self/stat');

/** Waits until a 500 ms window passes with under 5 ms of `cpu` (60 s at most); the CPU ms it took. */
export async function settle(cpu: () => number): Promise<number> {
  const start = cpu();
  for (let i = 0; i < 120; i += 1) {
    const before = cpu();
    await new Promise((r) => setTimeout(r, 500));
    if (cpu() - before < 5) break;
  }
  return cpu() - start;
}

export interface Measured<T> {
  readonly result: T;
  /** the target's CPU ms per answered request, settling included; null without a target or /proc */
  readonly cpuPerCallMs: number | null;
  /** of it, the CPU ms spent after the load stopped (all calls together) */
  readonly afterMs: number;
  /** the target's CPU time during the run / the run's wall time: how busy its core was */
  readonly coreShare: number | null;
  /** the companion's CPU ms per answered request (a projection worker, PROJECTIONS=external, or the embedded
   * database server with its backends), settled too */
  readonly companionCpuPerCallMs: number | null;
  readonly rssMb: number | null;
}

/** Runs `run` (a timed run, after its warm-up) and measures `pid` (and the process tree of `companionPid`) around it. */
export async function measured<T extends { readonly ok: number }>(run: () => Promise<T>, pid: number | null, companionPid?: number | null): Promise<Measured<T>> {
  const on = pid !== null && HAS_PROC;
  const companion = companionPid != null && HAS_PROC ? () => treeCpuMs(companionPid) : null;
  const before = on ? cpuMs(pid) : 0;
  const companionBefore = companion ? companion() : 0;
  const started = performance.now();
  const result = await run();
  const wallMs = performance.now() - started;
  const during = on ? cpuMs(pid) - before : 0;
  const afterMs = on ? await settle(() => cpuMs(pid)) : 0;
  if (companion) await settle(companion);
  const calls = Math.max(1, result.ok);
  return {
    result,
    cpuPerCallMs: on ? (during + afterMs) / calls : null,
    afterMs,
    coreShare: on ? during / wallMs : null,
    companionCpuPerCallMs: companion ? (companion() - companionBefore) / calls : null,
    rssMb: on ? memMb(pid, 'VmRSS') : null,
  };
}
