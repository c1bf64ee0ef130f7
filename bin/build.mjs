// Bundles src/cli.ts into dist/gateway.mjs with esbuild, so the gateway runs compiled JavaScript
// (no TypeScript compiler in its memory: docs/benchmarks.md, "Memory").
//
//   node bin/build.mjs      (npm run build) build now
//   ensureBundle()          what bin/gateway.mjs calls on every start: build (in a child
//                           process) only when dist/gateway.mjs is missing or older than one of INPUTS
//
// Packages stay external (node_modules is resolved at run time). Code that src/ loads with
// import() goes to content-hashed files in dist/chunks/, so it is only read when used.
// Concurrent builds are safe: every file is written to a temporary name and renamed into
// place, chunks first and dist/gateway.mjs last, so a reader sees either the old bundle or
// a complete new one.
import { mkdirSync, readdirSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const CHUNKS = join(DIST, 'chunks');
export const BUNDLE = join(DIST, 'gateway.mjs');
/** A change under any of these rebuilds the bundle (directories count: deleting a file changes its directory's time). */
const INPUTS = ['src', 'package.json', 'tsconfig.json', 'bin/build.mjs'];
/** Chunks of earlier builds are deleted once they are this old, not sooner: a gateway started
 * from an earlier build may still import them. */
const STALE_CHUNK_MS = 24 * 3600 * 1000;

function newestInputTime() {
  let newest = 0;
  const visit = (path) => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return;
    newest = Math.max(newest, stat.mtimeMs);
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  for (const input of INPUTS) visit(join(ROOT, input));
  return newest;
}

export function bundleIsFresh() {
  const bundle = statSync(BUNDLE, { throwIfNoEntry: false });
  return bundle !== undefined && bundle.mtimeMs >= newestInputTime();
}

function writeAtomically(path, contents, mtime) {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temporary, contents);
  if (mtime !== undefined) utimesSync(temporary, new Date(), new Date(Math.ceil(mtime)));
  renameSync(temporary, path);
}

/** Builds dist/; throws on a compile error (esbuild has printed it) or when dist/ cannot be written. */
export function build() {
  // The bundle gets the time of the newest input it was built from, so an edit made while
  // building is newer than the bundle and rebuilds it at the next start.
  const builtFrom = newestInputTime();
  // esbuild is loaded only to build; buildSync runs its binary once and leaves no service process.
  const { buildSync } = createRequire(import.meta.url)('esbuild');
  const result = buildSync({
    absWorkingDir: ROOT,
    entryPoints: { gateway: 'src/cli.ts' },
    outdir: DIST,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    sourcesContent: false,
    write: false,
    logLevel: 'warning',
  });
  const last = [`${BUNDLE}.map`, BUNDLE];
  const outputs = result.outputFiles.sort((a, b) => last.indexOf(a.path) - last.indexOf(b.path));
  for (const file of outputs) writeAtomically(file.path, file.contents, file.path === BUNDLE ? builtFrom : undefined);
  const current = new Set(outputs.map((file) => file.path));
  for (const entry of statSync(CHUNKS, { throwIfNoEntry: false }) ? readdirSync(CHUNKS, { withFileTypes: true }) : []) {
    const path = join(CHUNKS, entry.name);
    if (!entry.isFile() || current.has(path)) continue;
    try {
      if (Date.now() - statSync(path).mtimeMs > STALE_CHUNK_MS) unlinkSync(path);
    } catch {
      // another build removed it first
    }
  }
}

/** Exit status of `node bin/build.mjs` when dist/ cannot be written but a bundle exists. */
const READ_ONLY = 3;

/** The path of an up-to-date bundle, built if needed. If it is out of date but dist/ cannot be
 * written (e.g. a read-only install), the existing bundle is used with a warning. The build runs in
 * a child process: esbuild's memory (about 20 MB) then never becomes part of the gateway's. */
export function ensureBundle() {
  if (bundleIsFresh()) return BUNDLE;
  const built = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--quiet'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status === 0) return BUNDLE;
  if (built.status === READ_ONLY) return BUNDLE;
  process.stderr.write(`cannot build ${BUNDLE} from src/ (see above)\n`);
  process.exit(1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    build();
  } catch (error) {
    const exists = statSync(BUNDLE, { throwIfNoEntry: false }) !== undefined;
    if (exists && ['EACCES', 'EPERM', 'EROFS'].includes(error?.code)) {
      process.stderr.write(`warning: ${BUNDLE} is older than src/ but cannot be rebuilt (${error.message}); running it as it is\n`);
      process.exit(READ_ONLY);
    }
    // esbuild has printed its errors; anything else is printed here
    if (!error?.errors) process.stderr.write(`${error?.stack ?? error}\n`);
    process.exit(1);
  }
  if (!process.argv.includes('--quiet')) process.stdout.write(`built ${BUNDLE}\n`);
}
