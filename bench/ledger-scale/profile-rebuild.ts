// Where a rebuild's time goes: each projection's applyBatch and the log reads, summed (ms), for one rebuild of all,
// and this process's CPU time. `--batch N`: events a batch (default: the runner's).
import { parseArgs } from 'node:util';
import { allProjections } from '../../src/projections';
import { ProjectionRunner } from '../../src/projections/runner/runner';
import { settingsFromEnv } from '../../src/runtime/settings';
import { openStorage } from '../../src/runtime/storage';
import { storeWith } from '../../src/events/store/port';

const { values } = parseArgs({ options: { batch: { type: 'string' } } });
const storage = await openStorage(settingsFromEnv(process.env));
const spent = new Map<string, number>();
const timed = <T>(name: string, p: Promise<T>) => {
  const t0 = performance.now();
  return p.finally(() => spent.set(name, (spent.get(name) ?? 0) + performance.now() - t0));
};
const projections = allProjections.map((p) => ({ ...p, applyBatch: (tx: never, items: never, writes: never, memory: never) => timed(p.name, p.applyBatch(tx, items, writes, memory)) }));
const store = storeWith(storage.store, { readAll: (o) => timed('readAll', storage.store.readAll(o)) });
const runner = new ProjectionRunner(storage.sql, store, projections as never, values.batch ? { rebuildBatch: Number(values.batch) } : {});
await runner.migrate();
const t0 = performance.now();
const cpu0 = process.cpuUsage();
let events = 0;
let replayed = t0;
await runner.rebuild(projections.map((p) => p.name), (progress) => {
  events = progress.events;
  replayed = performance.now();
});
const total = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(`total ${Math.round(total)} ms, ${events} events, ${Math.round((events * 1000) / total)} events/s, this process's CPU ${Math.round((cpu.user + cpu.system) / 1000)} ms`);
console.log(`replay ${Math.round(replayed - t0)} ms, then the indexes ${Math.round(total - (replayed - t0))} ms`);
for (const [k, v] of spent) console.log(k, Math.round(v));
await storage.close();
