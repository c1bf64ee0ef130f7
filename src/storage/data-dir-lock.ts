import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** PGlite is one process's database: two processes on one DATA_DIR would corrupt it.
 * A pid file refuses the second one with a message saying what to do. */
export function acquireDataDirLock(dataDir: string): () => void {
  const path = join(dataDir, 'gateway.pid');
  try {
    writeFileSync(path, String(process.pid), { flag: 'wx' });
  } catch {
    const holder = Number(readFileSync(path, 'utf8').trim());
    if (holder && holder !== process.pid && isAlive(holder))
      throw new Error(
        `${dataDir} is in use by process ${holder} (the embedded database allows one process). Stop that gateway first, or use DATABASE_URL.`,
      );
    writeFileSync(path, String(process.pid));
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    try {
      if (readFileSync(path, 'utf8').trim() === String(process.pid)) rmSync(path);
    } catch {
      /* already gone */
    }
  };
  process.once('exit', release);
  return release;
}

/** Whether process `pid` exists (EPERM: it does, run by another user, such as the embedded server's). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
