/** CPU and memory of processes, read from /proc (Linux): the benchmark's measurements. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim() || 100);

/** utime and stime of a process (all its threads), in ms. */
export function cpuSplitMs(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) * TICK_MS, system: Number(fields[12]) * TICK_MS };
  } catch {
    return { user: 0, system: 0 };
  }
}
export const cpuMs = (pid: number) => {
  const c = cpuSplitMs(pid);
  return c.user + c.system;
};

/** CPU ms of each thread of a process, summed by thread name (`node` is the main thread, V8's helpers are `V8 DefaultWorke`, libuv's pool `libuv-worker`). */
export function threadCpuMs(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const label = tid === String(pid) ? `${name} (main thread)` : name;
      byName.set(label, (byName.get(label) ?? 0) + (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      /* thread ended */
    }
  }
  return byName;
}

/** Busy CPU time of the whole machine (all cores, every process), ms. */
export function machineBusyMs(): number {
  const v = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return ((v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0) + (v[5] ?? 0) + (v[6] ?? 0) + (v[7] ?? 0)) * TICK_MS;
}

export function memMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * A process tree: the process and every live descendant, each with its CPU ms including the children it has
 * reaped (`cutime`, `cstime`): a Postgres server, whose backends come and go (an exited one is in the
 * postmaster's). Its sum is the tree's CPU so far.
 */
export function processTree(root: number): Array<{ pid: number; cpuMs: number }> {
  const children = new Map<number, number[]>();
  const spent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const pid = Number(entry);
      const parent = Number(f[1]);
      children.set(parent, [...(children.get(parent) ?? []), pid]);
      spent.set(pid, (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS);
    } catch {
      /* ended */
    }
  }
  const tree: Array<{ pid: number; cpuMs: number }> = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    if (spent.has(pid)) tree.push({ pid, cpuMs: spent.get(pid)! });
    stack.push(...(children.get(pid) ?? []));
  }
  return tree;
}

export const treeCpuMs = (root: number) => processTree(root).reduce((sum, p) => sum + p.cpuMs, 0);
