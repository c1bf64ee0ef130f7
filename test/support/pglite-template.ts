import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

// vitest's global setup: one PGlite data directory, fresh from initdb, written once per run for every
// in-memory test database to start from (test/support/storage.ts). initdb is most of what opening a
// PGlite costs (about 3 s of CPU against 0.6 s to load the tarball), and the suite opens hundreds.

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite();
  await db.waitReady;
  const tarball = await db.dumpDataDir('none');
  await db.close();
  const path = join(tmpdir(), `gateway-pglite-template-${process.pid}.tar`);
  writeFileSync(path, Buffer.from(await tarball.arrayBuffer()));
  project.provide('pgliteTemplate', path);
  return () => rmSync(path, { force: true });
}
