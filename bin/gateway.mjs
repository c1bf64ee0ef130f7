#!/usr/bin/env node
// Runs the gateway as compiled JavaScript: dist/gateway.mjs, an esbuild bundle of src/cli.ts that
// is rebuilt here first whenever it is missing or older than a file under src/ (see build.mjs).
import { pathToFileURL } from 'node:url';
import { ensureBundle } from './build.mjs';

const bundle = ensureBundle();
// Stack traces name the TypeScript sources, through the bundle's source maps.
process.setSourceMapsEnabled(true);
await import(pathToFileURL(bundle).href);
