/** A V8 `.cpuprofile` as the summaries read it, and the window of one timed run of `run.ts`. */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
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
  toSources(profile);
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

/** Where a frame is, short: from its package (`node_modules/pg-protocol/src/parser.ts`, the innermost
 * package of a nested one) or else from the repository's `src/` or `dist/`, then its line. */
export function frameWhere(frame: CallFrame): string {
  const short = frame.url.includes('/node_modules/') ? frame.url.replace(/^.*\/node_modules\//, 'node_modules/') : frame.url.replace(/^.*\/(src|dist)\//, '$1/');
  return `${short.replace(/^node:internal\//, '')}:${frame.lineNumber + 1}`;
}

/**
 * The gateway runs as an esbuild bundle (dist/, bin/build.mjs), so its frames name bundle chunks
 * (`dist/chunks/serve-….mjs:2810`). Each such frame is moved, through the chunk's source map, to the file,
 * line and function it was built from (`src/upstream/json.ts`, `node_modules/pg/…`): areas and names then
 * read as the sources do. Frames of files without a map are left as they are.
 */
function toSources(profile: Profile): void {
  const maps = new Map<string, { map: SourceMap; dir: string } | null>();
  for (const { callFrame: frame } of profile.nodes) {
    if (!frame.url.startsWith('file://') || !frame.url.includes('/dist/')) continue;
    let found = maps.get(frame.url);
    if (found === undefined) {
      const path = `${fileURLToPath(frame.url)}.map`;
      found = existsSync(path) ? { map: new SourceMap(JSON.parse(readFileSync(path, 'utf8'))), dir: dirname(path) } : null;
      maps.set(frame.url, found);
    }
    if (!found) continue;
    const entry = found.map.findEntry(frame.lineNumber, frame.columnNumber ?? 0) as { originalSource?: string; originalLine?: number; name?: string };
    if (!entry.originalSource) continue;
    frame.url = pathToFileURL(resolve(found.dir, entry.originalSource)).href;
    frame.lineNumber = entry.originalLine ?? frame.lineNumber;
    if (!frame.functionName && entry.name) frame.functionName = entry.name;
  }
}
