#!/usr/bin/env node
// Runs the gateway as compiled JavaScript: dist/gateway.mjs, an esbuild bundle of src/cli.ts that
// is rebuilt here first whenever it is missing or older than a file under src/ (see build.mjs).
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { ensureBundle } from './build.mjs';

const bundle = ensureBundle();

// `projections rebuild` turns over a young generation's worth of short-lived objects (rows, decoded events)
// every few milliseconds: with semi-spaces of 64 MB instead of V8's 16 its scavenges cost about a tenth of
// its CPU less, and the rebuild runs that much faster (docs/benchmarks.md, "Rebuild"), for up to ~150 MB
// more memory while it runs. V8 sizes its heap when the process starts, so the command runs again in a
// node started with that flag, unless the operator chose a size (in the node flags or NODE_OPTIONS).
const args = process.argv.slice(2);
const rebuild = args.some((arg, i) => arg === 'projections' && args[i + 1] === 'rebuild');
const sized = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((flag) => flag.startsWith('--max-semi-space-size'));
if (rebuild && !sized) {
  // The bundle itself, checked just above (through this file again, its sources would be checked twice).
  const child = spawn(process.execPath, [...process.execArgv, '--max-semi-space-size=64', '--enable-source-maps', bundle, ...args], { stdio: 'inherit' });
  // The terminal's Ctrl-C reaches both; a signal sent to this process alone is passed on.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
} else {
  // Stack traces name the TypeScript sources, through the bundle's source maps.
  process.setSourceMapsEnabled(true);
  await import(pathToFileURL(bundle).href);
}
