import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.spec.ts', 'test/**/*.spec.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // PGlite instances are heavy (WASM); two workers match this machine's two cores.
    maxWorkers: 2,
    // One initdb per run instead of one per in-memory database.
    globalSetup: ['test/support/pglite-template.ts'],
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.test-results/vitest.json' },
  },
});
