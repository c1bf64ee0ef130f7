/** A V8 `.cpuprofile` as the summaries read it, and the window of one timed run of `run.ts`. */
import { readFileSync } from 'node:fs';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The profile, its nodes by id and each node's parent. */
export function loadProfile(file: string) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return { profile, byId, parent };
}

/** The CLOCK_MONOTONIC window (µs, the profile's clock) of the timed run `run` in run.ts's results.json. */
export function runWindow(resultsFile: string, run: string): [number, number] {
  const results = JSON.parse(readFileSync(resultsFile, 'utf8')) as { measurements: Array<{ name: string; monotonicUs: [number, number] }> };
  const found = results.measurements.find((m) => m.name === run);
  if (!found) throw new Error(`no run ${run} in the results`);
  return found.monotonicUs;
}
